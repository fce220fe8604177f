import Foundation
import Glibc
import SystemSupport

/// Writes a wrapper tree to disk for `FileWrapper.write(to:options:originalContentsURL:)`.
///
/// Regular files that were read lazily and never loaded are copied file-to-file (reflink or
/// `copy_file_range`), never through memory; when they came from inside the original contents and
/// are unchanged there, they are hard-linked, so an untouched 1 GiB asset costs one `link(2)`.
struct FileWrapperWriter {
    let originalPath: String?
    let updateNames: Bool
    let linkAnyUnchangedFile: Bool

    func write(_ wrapper: FileWrapper, to path: String) throws {
        switch wrapper.kind {
        case .regularFile: try writeRegularFile(wrapper, to: path)
        case .symbolicLink:
            try Paths.makeSymbolicLink(path, target: wrapper.linkDestinationText ?? "")
        case .directory:
            try Paths.makeDirectory(path, mode: permissions(of: wrapper) ?? 0o755)
            for (_, name, child) in Self.names(of: wrapper.fileWrappers ?? [:]) {
                try write(child, to: path + "/" + name)
            }
            if let mode = permissions(of: wrapper) { try? Paths.setPermissions(path, mode) }
            try applyModificationDate(of: wrapper, to: path)
        }
    }

    /// After a successful write: every wrapper now stands for the item it was written to.
    func finish(_ wrapper: FileWrapper, at path: String) {
        if let status = try? FileStatus.of(path: path) { wrapper.recordWritten(path: path, status: status) }
        if updateNames { wrapper.filename = (path as NSString).lastPathComponent }
        for (_, name, child) in Self.names(of: wrapper.loadedChildrenIfAny ?? [:]) { finish(child, at: path + "/" + name) }
    }

    /// The name each child is written under: its key, as on Apple platforms, except for a child
    /// whose key `FileWrapper.uniqueKey` made because a sibling's name is equal as a `String`
    /// though not in bytes (the NFC and NFD spellings of one word): that one is written under
    /// its own name, which no sibling's key takes, so a package read and written again keeps both
    /// members as they were.
    static func names(of children: [String: FileWrapper]) -> [(key: String, name: String, child: FileWrapper)] {
        var taken = Set(children.keys.map(PathKey.init))
        return children.map { key, child in
            guard let own = ownName(ifCollisionKey: key, of: child), taken.insert(PathKey(own)).inserted else { return (key, key, child) }
            return (key, own, child)
        }
    }

    /// The child's own name (the one it would like, else the one it was read under) where `key` is
    /// `N__#$!@%!#__` followed by it, `FileWrapper.uniqueKey`'s form; nil otherwise (and at once
    /// for a key not starting with a digit, so a scan of thousands of keys costs little).
    static func ownName(ifCollisionKey key: String, of child: FileWrapper) -> String? {
        guard let first = key.utf8.first, (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(first) else { return nil }
        let marker = Array("__#$!@%!#__".utf8)
        let bytes = Array(key.utf8)
        let digits = bytes.prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }.count
        guard bytes.dropFirst(digits).starts(with: marker) else { return nil }
        let rest = bytes.dropFirst(digits + marker.count)
        return [child.preferredFilename, child.filename].compactMap { $0 }.first { rest.elementsEqual($0.utf8) }
    }

    private func writeRegularFile(_ wrapper: FileWrapper, to path: String) throws {
        if let source = wrapper.unchangedSource,
           let current = try? FileStatus.of(path: source.path), current.version == source.status.version
        {
            let linkable = linkAnyUnchangedFile || originalPath.map { StorePath.isWithin(source.path, $0) && !FileSystemPath.same(source.path, $0) } ?? false
            if linkable, permissions(of: wrapper).map({ $0 == current.permissions }) ?? true,
               (try? Paths.makeHardLink(path, to: source.path)) != nil
            {
                return
            }
            try copyFile(from: source.path, to: path, mode: permissions(of: wrapper) ?? current.permissions)
            try applyModificationDate(of: wrapper, to: path)
            return
        }
        let descriptor = try FileIO.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: permissions(of: wrapper) ?? 0o644)
        defer { FileIO.close(descriptor) }
        if let contents = wrapper.regularFileContents {
            try FileIO.writeAll(descriptor, contents, path: path)
        }
        if let mode = permissions(of: wrapper) { fchmod(descriptor, mode) }
        try applyModificationDate(of: wrapper, to: path)
    }

    private func copyFile(from source: String, to destination: String, mode: mode_t) throws {
        let input = try FileIO.open(source, O_RDONLY)
        defer { FileIO.close(input) }
        let output = try FileIO.open(destination, O_WRONLY | O_CREAT | O_EXCL, mode: mode)
        defer { FileIO.close(output) }
        try FileIO.copyContents(from: input, to: output, path: destination)
        fchmod(output, mode)
    }

    private func permissions(of wrapper: FileWrapper) -> mode_t? {
        (wrapper.fileAttributes[FileAttributeKey.posixPermissions.rawValue] as? NSNumber).map { mode_t($0.uint32Value & 0o7777) }
            ?? (wrapper.fileAttributes[FileAttributeKey.posixPermissions.rawValue] as? Int).map { mode_t($0 & 0o7777) }
    }

    private func applyModificationDate(of wrapper: FileWrapper, to path: String) throws {
        guard let date = wrapper.fileAttributes[FileAttributeKey.modificationDate.rawValue] as? Date else { return }
        try FileIO.setModificationTime(path, date)
    }
}
