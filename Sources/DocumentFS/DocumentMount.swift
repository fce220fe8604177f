import DocumentStore
import FUSE
import Logging
import SystemSupport

/// Serves a document store as a file system: the public entry point, in the spirit of SwiftUI's
/// `DocumentGroup`. Give it a store, the document types, and options; `serve` mounts and runs until
/// the file system is unmounted or the process is told to stop.
///
///     let mount = DocumentMount(store: try DirectoryStore(path: "/srv/notes"),
///                               types: [.fileDocument(PlainTextDocument.self)], options: DocumentFSOptions())
///     try mount.serve(at: "/mnt/notes")
public final class DocumentMount: Sendable {
    let fileSystem: DocumentFileSystem

    public convenience init(store: any DocumentStore, types: [DocumentType], options: DocumentFSOptions) {
        self.init(store: store, rules: DocumentTypeRules(types: types), options: options)
    }

    /// A mount whose files are claimed by `rules` (types, name patterns, extensions).
    public init(store: any DocumentStore, rules: DocumentTypeRules, options: DocumentFSOptions) {
        fileSystem = DocumentFileSystem(store: store, rules: rules, options: options)
    }

    /// The FUSE `-o` options the mount uses.
    public var mountOptions: [String] {
        let options = fileSystem.options
        // libfuse splits options at commas; a backslash keeps one (or a backslash) in a value.
        // By bytes: a comma followed by a combining mark is one `Character`, not a comma.
        let name = FileSystemPath.string(fromBytes: FileSystemPath.bytes(of: options.fileSystemName).flatMap { byte in
            byte == UInt8(ascii: ",") || byte == UInt8(ascii: "\\") ? [UInt8(ascii: "\\"), byte] : [byte]
        })
        var result = ["default_permissions", "fsname=\(name)", "subtype=docfs"]
        if options.readOnly { result.append("ro") }
        if options.allowOther { result.append("allow_other") }
        return result + options.extraMountOptions
    }

    /// Mounts at `mountPoint`, calls `ready` once the mount is in place, and serves requests until
    /// unmounted (returns 0) or stopped by SIGINT, SIGTERM or SIGHUP (returns the signal number).
    @discardableResult
    public func serve(at mountPoint: String, ready: () -> Void = {}) throws -> Int32 {
        let session = try FUSESession(operations: MountOperations(documents: fileSystem), mountPoint: mountPoint, options: mountOptions)
        if session.autoUnmountMayLeaveTheMount {
            fileSystem.logger.warning("auto_unmount: the socket to fusermount3 was not found among this process's descriptors; if this daemon is killed, its mount may stay behind (fusermount3 -uz \(mountPoint) removes it)")
        }
        fileSystem.notifier.attach(session)
        defer { fileSystem.notifier.attach(nil) }
        fileSystem.startWatching()
        ready()
        return session.run(threads: fileSystem.options.threads)
    }

    /// How many inodes the kernel holds references to (for diagnostics and tests).
    public var knownInodeCount: Int { fileSystem.nodes.count }

    /// Sets the gauges of what the mount holds now (`docfs_open_handles`, `docfs_inodes_held`):
    /// called as metrics are read, so nothing is counted on the requests' path.
    public func sampleMetrics() {
        DocumentMetrics.sample(openHandles: fileSystem.files.count, inodes: fileSystem.nodes.count)
    }
}
