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
            for (key, child) in wrapper.fileWrappers ?? [:] {
                try write(child, to: path + "/" + key)
            }
            if let mode = permissions(of: wrapper) { try? Paths.setPermissions(path, mode) }
            try applyModificationDate(of: wrapper, to: path)
        }
    }

    /// After a successful write: every wrapper now stands for the item it was written to.
    func finish(_ wrapper: FileWrapper, at path: String) {
        if let status = try? FileStatus.of(path: path) { wrapper.recordWritten(path: path, status: status) }
        if updateNames { wrapper.filename = (path as NSString).lastPathComponent }
        for (key, child) in wrapper.loadedChildrenIfAny ?? [:] { finish(child, at: path + "/" + key) }
    }

    private func writeRegularFile(_ wrapper: FileWrapper, to path: String) throws {
        if let source = wrapper.unchangedSource,
           let current = try? FileStatus.of(path: source.path), current.version == source.status.version
        {
            let linkable = linkAnyUnchangedFile || originalPath.map { source.path.hasPrefix($0 + "/") } ?? false
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
