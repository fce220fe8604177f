import Glibc

/// A reader-writer lock (pthread_rwlock) that prefers writers, so a stream of readers cannot starve
/// the occasional writer. For sections that are short and never wait on anything else. At a level
/// of the lock hierarchy (`LockLevel`), shared or not.
public final class ReadWriteLock: @unchecked Sendable {
    // Usable from inlinable code: `reading` and `writing` are specialized where they are called
    // (generic and unspecialized, every call looked up its types' metadata at run time).
    @usableFromInline let lock: UnsafeMutablePointer<pthread_rwlock_t>
    @usableFromInline let level: LockLevel

    public init(_ level: LockLevel) {
        self.level = level
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    @inlinable
    public func reading<T, E: Error>(site: StaticString = #fileID, line: UInt = #line, _ body: () throws(E) -> T) throws(E) -> T {
        LockOrder.acquiring(level, key: 0, site: site, line: line)
        pthread_rwlock_rdlock(lock)
        defer { release() }
        return try body()
    }

    @inlinable
    public func writing<T, E: Error>(site: StaticString = #fileID, line: UInt = #line, _ body: () throws(E) -> T) throws(E) -> T {
        LockOrder.acquiring(level, key: 0, site: site, line: line)
        pthread_rwlock_wrlock(lock)
        defer { release() }
        return try body()
    }

    /// Takes the lock exclusively if it can within `milliseconds`; nil when it could not. A waiting
    /// writer holds off new readers (the lock prefers writers), so a writer that must not stall
    /// readers behind a long-held shared lock waits briefly, gives up, and tries again later.
    public func writing<T, E: Error>(
        within milliseconds: Int, site: StaticString = #fileID, line: UInt = #line, _ body: () throws(E) -> T
    ) throws(E) -> T? {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + milliseconds * 1_000_000
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        LockOrder.acquiring(level, key: 0, site: site, line: line)
        guard pthread_rwlock_timedwrlock(lock, &deadline) == 0 else {
            LockOrder.released(level, key: 0)
            return nil
        }
        defer { release() }
        return try body()
    }

    @usableFromInline
    func release() {
        pthread_rwlock_unlock(lock)
        LockOrder.released(level, key: 0)
    }
}
