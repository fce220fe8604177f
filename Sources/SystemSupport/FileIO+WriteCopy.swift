import Glibc

extension FileIO {
    /// Writes the contents of the file at `source` over the file at `destination` (made, with the
    /// source's mode, where it does not exist) and closes it, the close's error included: through a
    /// DocFS mount that close is the save, and its answer is the save's. For restoring a version.
    public static func writeCopy(of source: String, over destination: String) throws {
        let input = OwnedDescriptor(try open(source, O_RDONLY | O_NONBLOCK))
        let mode = (try? input.status())?.permissions ?? 0o600
        let output = try open(destination, O_WRONLY | O_CREAT | O_TRUNC, mode: mode & 0o777)
        do {
            try copyContents(from: input.rawValue, to: output, path: destination)
        } catch {
            Glibc.close(output)
            throw error
        }
        guard Glibc.close(output) == 0 else { throw SystemCallError.last("close", path: destination) }
    }
}
