import Foundation
import Glibc

/// An open file that a test reads in steps, to let a writer (or another mount) act between them.
final class StepReader {
    private(set) var descriptor: Int32
    /// Everything read so far.
    private(set) var bytes: [UInt8] = []

    init(_ path: String) throws {
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ENOENT) }
    }

    /// Reads until `limit` bytes are in (or end-of-file), `chunk` bytes at a time (64 KiB, as `cat`).
    func read(upTo limit: Int, chunk: Int = 1 << 16) {
        var buffer = [UInt8](repeating: 0, count: chunk)
        while bytes.count < limit {
            let count = buffer.withUnsafeMutableBytes { raw in
                raw.baseAddress.map { Glibc.read(descriptor, $0, min(raw.count, limit - bytes.count)) } ?? -1
            }
            guard count > 0 else { return }
            bytes += buffer[0..<count]
        }
    }

    /// Whether what was read is exactly `expected`. Compared here, not in `#expect`: a failing `==`
    /// of two arrays of megabytes would be diffed element by element.
    func read(exactly expected: [UInt8]) -> Bool { bytes == expected }

    /// The size `fstat` shows for the open file.
    var size: Int64? {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? Int64(status.st_size) : nil
    }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    deinit { close() }
}
