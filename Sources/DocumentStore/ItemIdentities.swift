import Glibc
import Synchronization
import SystemSupport

/// The numbers a directory store's items are known by in the mount, which stay an item's own for as
/// long as it exists: backup tools (restic, borg, tar's incremental mode) and git key on them, and
/// a number that changed makes them read the file again.
///
/// An item is known by the number its file system gave it until a save replaces its file. The new
/// file then carries the old number in an extended attribute: `trusted.docfs.identity` for a root
/// daemon (nobody else can read or change that namespace), `user.docfs.identity` otherwise; the
/// mount hides both. The attribute names the file it was written on too (`IdentityAttribute`), so a
/// copy that took it along (`cp -a` by root) gets a fresh number instead of its original's. A
/// number carried away from the file that the file system gave it to is recorded as *carried*: the
/// file system gives that number to a new file once the old one is gone, and such a file, found
/// without an attribute, gets a fresh number instead of a duplicate.
///
/// Fresh numbers start above 2^62, beyond any a local file system gives, and are counted in the
/// private area. A document DocFS creates gets one at once, so its first save carries nothing; only
/// the first save of a file made beside DocFS records a carried number (8 bytes, synced before the
/// save is installed).
final class ItemIdentities: Sendable {
    /// Numbers DocFS hands out: above every file system's own.
    static let freshBase: UInt64 = 1 << 62
    /// An item that needs a fresh number and cannot be given one (a read-only store) is known by
    /// its file system's number with this bit set: its own while its file exists, and never carried.
    static let transientBit: UInt64 = 1 << 63
    /// How many fresh numbers one write of the counter reserves.
    private static let reservation: UInt64 = 4096

    /// The attribute holding a carried or fresh number; nil when the store cannot keep one (its
    /// file system has no extended attributes), and numbers are then the file system's own.
    let attributeName: String?

    private struct State {
        var carried: Set<UInt64>
        var carriedFile: Int32
        /// Where the next carried number is written: whole entries only, so a write a full disk cut
        /// short is written over by the next.
        var carriedLength: Int64
        var counterFile: Int32
        var nextFresh: UInt64
        var reservedEnd: UInt64
    }

    private let state: OrderedMutex<State>
    private let renumber = OrderedMutex<Void>(.renumbering, ())

    /// Reads the carried numbers and the counter from `directory` (the private area), made there
    /// when `writable`. `probe` is an item of the store to test the attribute on.
    init(directory: String?, probe: String?, writable: Bool) {
        var carried = Set<UInt64>()
        var carriedFile: Int32 = -1
        var counterFile: Int32 = -1
        var carriedLength: Int64 = 0
        var stored: UInt64 = 0
        if let directory {
            let flags = writable ? O_RDWR | O_CREAT : O_RDONLY
            carriedFile = (try? FileIO.open(directory + "/identities-carried", flags | O_CLOEXEC, mode: 0o600)) ?? -1
            counterFile = writable ? (try? FileIO.open(directory + "/identities-next", O_RDWR | O_CREAT | O_CLOEXEC, mode: 0o600)) ?? -1 : -1
            if carriedFile >= 0, let data = try? FileIO.contents(of: carriedFile, size: Int((try? FileStatus.of(descriptor: carriedFile))?.size ?? 0), mapping: false) {
                // Whole entries only: a tail a crash cut short names nothing.
                let bytes = [UInt8](data)
                carried.reserveCapacity(bytes.count / 8)
                carriedLength = Int64(bytes.count - bytes.count % 8)
                for start in stride(from: 0, to: Int(carriedLength), by: 8) {
                    carried.insert(Self.number(bytes[start..<start + 8]))
                }
            }
            if counterFile >= 0, let data = try? FileIO.contents(of: counterFile, size: 8, mapping: false), data.count == 8 {
                stored = Self.number([UInt8](data)[0..<8])
            }
        }
        // A counter lost or damaged must not hand out numbers again: starting from the clock (in
        // nanoseconds, well below 2^62 for centuries) stays above every number counted before,
        // unless more were counted than nanoseconds have passed.
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let clock = Self.freshBase + UInt64(max(0, now.tv_sec)) * 1_000_000_000 + UInt64(max(0, now.tv_nsec))
        let start = stored >= Self.freshBase && stored < Self.transientBit ? max(stored, clock) : clock
        state = OrderedMutex(.identities, State(
            carried: carried, carriedFile: carriedFile, carriedLength: carriedLength, counterFile: counterFile, nextFresh: start, reservedEnd: start))
        attributeName = probe.flatMap { Self.supportedAttribute(on: $0, writable: writable) }
    }

    deinit {
        state.withLock { state in
            if state.carriedFile >= 0 { close(state.carriedFile) }
            if state.counterFile >= 0 { close(state.counterFile) }
        }
    }

    /// The namespace this daemon can keep numbers in on the store's file system.
    private static func supportedAttribute(on probe: String, writable: Bool) -> String? {
        let candidates = geteuid() == 0 ? ["trusted.docfs.identity", "user.docfs.identity"] : ["user.docfs.identity"]
        for name in candidates {
            if !writable { return name }
            let probeName = name + "-probe"
            let value: [UInt8] = [1]
            let set = value.withUnsafeBytes { (try? Paths.setExtendedAttribute(probe, name: probeName, value: $0, flags: 0)) != nil }
            if set {
                try? Paths.removeExtendedAttribute(probe, name: probeName)
                return name
            }
        }
        return nil
    }

    static func number(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func bytes(of number: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: number >> (8 * $0)) }
    }

    /// Whether an item without an attribute can be known by its file system's number: not one
    /// carried away to another item, and not in DocFS's own range.
    func ownsNumber(_ inode: UInt64) -> Bool {
        inode < Self.freshBase && !state.withLock { $0.carried.contains(inode) }
    }

    /// Runs `body`, which replaces a copied number (see `IdentityAttribute`), alone: two lookups of
    /// one copy give it one number.
    func renumbering<T>(_ body: () -> T) -> T { renumber.withLock { _ in body() } }

    /// A number no item has had.
    func fresh() -> UInt64? {
        state.withLock { state -> UInt64? in
            if state.nextFresh == state.reservedEnd {
                guard state.counterFile >= 0 else { return nil }
                let end = state.reservedEnd + Self.reservation
                let written = Self.bytes(of: end).withUnsafeBytes { bytes in
                    (try? FileIO.writeAll(state.counterFile, bytes, offset: 0)) != nil
                }
                guard written, (try? FileIO.synchronize(state.counterFile, dataOnly: true)) != nil else { return nil }
                state.reservedEnd = end
            }
            defer { state.nextFresh += 1 }
            return state.nextFresh
        }
    }

    /// Records that `inode`, the file system's number of an item about to be replaced, now names
    /// the item's successor, synced before the successor is installed. False when it cannot be
    /// recorded (the successor then takes a fresh number).
    func recordCarried(_ inode: UInt64) -> Bool {
        state.withLock { state in
            if state.carried.contains(inode) { return true }
            guard state.carriedFile >= 0 else { return false }
            let written = Self.bytes(of: inode).withUnsafeBytes { (try? FileIO.writeAll(state.carriedFile, $0, offset: state.carriedLength)) != nil }
            guard written, (try? FileIO.synchronize(state.carriedFile, dataOnly: true)) != nil else { return false }
            state.carriedLength += 8
            state.carried.insert(inode)
            return true
        }
    }
}
