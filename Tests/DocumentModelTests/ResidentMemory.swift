import Foundation
import Glibc
import Synchronization

/// The process's resident memory, for tests that check what an operation costs. Such tests measure
/// the whole process while other tests run beside them, so they take turns: `measuring` holds a lock
/// that every memory-measuring test takes.
enum ResidentMemory {
    private static let turn = Mutex(())

    static func measuring<T>(_ body: () throws -> T) rethrows -> T {
        try turn.withLock { _ in try body() }
    }

    static var bytes: Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = statm.split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
    }
}
