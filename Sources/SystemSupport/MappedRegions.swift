import Glibc
import Synchronization

/// The file mappings `FileIO.mapContents` made and that are still mapped, so a reader that walks a
/// large mapped file once (a validator) can give back the pages it has passed: touched pages of a
/// mapping count towards the process's resident memory until they are unmapped or released.
public enum MappedRegions {
    private static let regions = OrderedMutex<[UInt: Int]>(.innermost, [:])

    static func register(_ base: UnsafeMutableRawPointer, length: Int) {
        regions.withLock { $0[UInt(bitPattern: base)] = length }
    }

    static func unregister(_ base: UnsafeMutableRawPointer) {
        _ = regions.withLock { $0.removeValue(forKey: UInt(bitPattern: base)) }
    }

    /// Releases the resident pages of `buffer` before `offset` when the buffer lies in a read-only
    /// file mapping DocFS made; does nothing for any other memory. The bytes stay readable: a later
    /// access reads them again from the page cache.
    public static func releasePages(of buffer: UnsafeRawBufferPointer, before offset: Int) {
        guard let start = buffer.baseAddress, offset > 0 else { return }
        let address = UInt(bitPattern: start)
        let isMapped = regions.withLock { regions in
            regions.contains { base, length in base <= address && address + UInt(buffer.count) <= base + UInt(length) }
        }
        guard isMapped else { return }
        let pageSize = UInt(sysconf(Int32(_SC_PAGESIZE)))
        // Only whole pages inside the buffer: the first partial page may hold bytes before it.
        let first = (address + pageSize - 1) / pageSize * pageSize
        let end = (address + UInt(min(offset, buffer.count))) / pageSize * pageSize
        guard end > first, let pointer = UnsafeMutableRawPointer(bitPattern: first) else { return }
        madvise(pointer, Int(end - first), MADV_DONTNEED)
    }
}
