import Glibc
import Synchronization

/// Whether this process collects metrics (`docfs mount --metrics`): turned on once, before the
/// mount serves, after a metrics backend is bootstrapped. Counters cost nothing without one (the
/// no-op handler); only what costs more asks this — timing a request reads the clock twice.
public enum MetricsSwitch {
    private static let on = Atomic<Bool>(false)

    public static var isOn: Bool { on.load(ordering: .relaxed) }

    public static func turnOn() { on.store(true, ordering: .relaxed) }

    /// CLOCK_MONOTONIC now, in nanoseconds, where metrics are on; nil where they are off.
    public static func start() -> UInt64? {
        guard isOn else { return nil }
        return now()
    }

    /// The nanoseconds since `start` (one of `start()`'s).
    public static func nanoseconds(since start: UInt64) -> Int64 {
        Int64(clamping: now() &- start)
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
