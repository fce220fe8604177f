import Glibc

/// A reader-writer lock (pthread_rwlock) that prefers writers, so a stream of readers cannot starve
/// the occasional writer. For sections that are short and never wait on anything else.
public final class ReadWriteLock: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    public init() {
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

    public func reading<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    public func writing<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Takes the lock exclusively if it can within `milliseconds`; nil when it could not. A waiting
    /// writer holds off new readers (the lock prefers writers), so a writer that must not stall
    /// readers behind a long-held shared lock waits briefly, gives up, and tries again later.
    public func writing<T, E: Error>(within milliseconds: Int, _ body: () throws(E) -> T) throws(E) -> T? {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + milliseconds * 1_000_000
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        guard pthread_rwlock_timedwrlock(lock, &deadline) == 0 else { return nil }
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
