import Synchronization
import SystemSupport
import Testing

/// The lock hierarchy's check (`LockLevel`; debug builds, or `DOCFS_CHECK_LOCK_ORDER=1`): every daemon the integration tests start
/// runs with it, and stops at the first lock taken out of order; these show it catches each kind.
@Suite(.serialized)
struct LockOrderTests {
    /// Runs `body` with violations collected instead of stopping the process.
    private func violations(_ body: () -> Void) -> [String] {
        let found = Mutex<[String]>([])
        LockOrder.report { message in found.withLock { $0.append(message) } }
        defer { LockOrder.report(to: nil) }
        body()
        return found.withLock { $0 }
    }

    @Test func theTestsRunWithTheCheck() {
        #expect(LockOrder.isChecked, "a debug build checks every acquisition; scripts/test runs its release build with DOCFS_CHECK_LOCK_ORDER=1")
    }

    @Test func locksTakenInTheHierarchysOrderPass() {
        let staging = OrderedMutex(.staging, key: 3, 0)
        let namespace = ReadWriteLock(.namespace)
        let table = OrderedMutex(.nodeTable, 0)
        let log = OrderedMutex(.leaf, 0)
        let found = violations {
            staging.withLock { _ in namespace.reading { table.withLock { _ in log.withLock { _ in } } } }
            namespace.writing { log.withLock { _ in } }
        }
        #expect(found == [])
        #expect(LockOrder.heldCount == 0)
    }

    @Test func anEarlierLevelTakenInsideALaterOneIsCaught() {
        let namespace = ReadWriteLock(.namespace)
        let staging = OrderedMutex(.staging, key: 7, 0)
        let found = violations { namespace.reading { staging.withLock { _ in } } }
        #expect(found.count == 1)
        // Both sites are named: where the held lock was taken and where the other was asked for.
        #expect(found.first?.contains("taking staging (key 7) at DocumentStoreTests/LockOrderTests.swift:") == true, "\(found)")
        #expect(found.first?.contains("while holding namespace (key 0) taken at DocumentStoreTests/LockOrderTests.swift:") == true, "\(found)")
        #expect(LockOrder.heldCount == 0)
    }

    @Test func stagingLocksNestOnlyInInodeOrder() {
        let first = OrderedMutex(.staging, key: 3, 0)
        let second = OrderedMutex(.staging, key: 9, 0)
        #expect(violations { first.withLock { _ in second.withLock { _ in } } } == [])
        let found = violations { second.withLock { _ in first.withLock { _ in } } }
        #expect(found.first?.contains("taking staging (key 3) at") == true, "\(found)")
        #expect(found.first?.contains("while holding staging (key 9)") == true, "\(found)")
    }

    @Test func aLeafTakesNoOtherLock() {
        let handles = OrderedMutex(.leaf, 0)
        let cache = OrderedMutex(.leaf, 0)
        let table = OrderedMutex(.nodeTable, 0)
        let found = violations {
            handles.withLock { _ in cache.withLock { _ in } }
            handles.withLock { _ in table.withLock { _ in } }
        }
        #expect(found.count == 2, "\(found)")
    }

    /// A shared lock taken again by its holder deadlocks once a writer queues between the two
    /// (the lock prefers writers): caught even while no writer is there.
    @Test func aReaderTakingItsLockAgainIsCaught() {
        let namespace = ReadWriteLock(.namespace)
        let found = violations { namespace.reading { namespace.reading {} } }
        #expect(found.first?.contains("while holding namespace (key 0)") == true, "\(found)")
    }
}
