import Glibc

/// Marks the stretches where the calling thread holds a lock that every lookup needs (DocFS's
/// namespace, exclusively). A store asked to change something there must not wait out an outage of
/// its database (a failover takes seconds, and every `ls` and `stat` would wait with it): it fails
/// the change at once, noting that it did, and the caller waits with the lock released
/// (`DocumentStore.awaitWritable`) and tries again.
public enum LookupLockScope {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The thread's value: 1 held, 2 held and a store declined to wait.
    private static let held = 1
    private static let waitDeclined = 2

    private static var value: Int { Int(bitPattern: pthread_getspecific(key)) }
    private static func set(_ value: Int) { pthread_setspecific(key, UnsafeRawPointer(bitPattern: value)) }

    /// Runs `body` marked; returns its result and whether a store declined to wait in it.
    public static func holding<T, E: Error>(_ body: () throws(E) -> T) -> (Result<T, E>, declinedWait: Bool) {
        set(held)
        defer { set(0) }
        let result: Result<T, E>
        do throws(E) {
            result = .success(try body())
        } catch {
            result = .failure(error)
        }
        return (result, value == waitDeclined)
    }

    /// Whether the calling thread is in such a stretch.
    public static var isHeld: Bool { value != 0 }

    /// Called by a store that fails a change instead of waiting.
    public static func noteWaitDeclined() {
        if isHeld { set(waitDeclined) }
    }
}
