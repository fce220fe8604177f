import Foundation
import Glibc
import SystemSupport
import Testing

/// `ConfinedTrees`: each thread asks its own copy of the open trees, taken again when one opens or
/// closes. A copy taken before a change must never decide a later call.
@Suite struct ConfinedTreeTableTests {
    /// A thread that resolved a path beneath a tree, then resolves it again after the tree closed
    /// on another thread: as any path (here through a link, which a tree never follows).
    @Test func aTreeClosedOnAnotherThreadNoLongerConfinesThisOnesCalls() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-trees-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/elsewhere", withIntermediateDirectories: true)
        try Data("there".utf8).write(to: URL(fileURLWithPath: folder + "/elsewhere/x"))
        try FileManager.default.createDirectory(atPath: folder + "/tree/a", withIntermediateDirectories: true)
        try Data("here".utf8).write(to: URL(fileURLWithPath: folder + "/tree/a/x"))
        let tree = try ConfinedTree(path: folder + "/tree")
        // Another tree stays open, so the table is asked after the first one closes.
        try FileManager.default.createDirectory(atPath: folder + "/other", withIntermediateDirectories: true)
        let other = try ConfinedTree(path: folder + "/other")
        defer { other.release() }

        let worker = Worker()
        defer { worker.stop() }
        #expect(worker.run { (try? FileIO.readFile(folder + "/tree/a/x")).map { String(decoding: $0, as: UTF8.self) } } == "here")
        // Beneath the tree, `a` as a link leads nowhere.
        try FileManager.default.removeItem(atPath: folder + "/tree/a")
        try FileManager.default.createSymbolicLink(atPath: folder + "/tree/a", withDestinationPath: folder + "/elsewhere")
        #expect(worker.run { try? FileIO.readFile(folder + "/tree/a/x") } == nil, "a link beneath a tree was followed")
        tree.release()
        #expect(
            worker.run { (try? FileIO.readFile(folder + "/tree/a/x")).map { String(decoding: $0, as: UTF8.self) } } == "there",
            "the worker still resolved beneath a tree closed on another thread")
    }

    /// One thread that runs what it is given, one thing at a time, until stopped.
    private final class Worker: @unchecked Sendable {
        private let lock = NSCondition()
        private var job: (() -> Void)?
        private var stopped = false

        init() {
            Thread.detachNewThread { [self] in
                while let next = nextJob() { next() }
            }
        }

        private func nextJob() -> (() -> Void)? {
            lock.lock()
            defer { lock.unlock() }
            while job == nil && !stopped { lock.wait() }
            defer { job = nil }
            return job
        }

        /// Runs `body` on the worker's thread and returns its result.
        func run<T>(_ body: @escaping () -> T) -> T {
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var result: T?
            lock.lock()
            job = {
                result = body()
                done.signal()
            }
            lock.signal()
            lock.unlock()
            done.wait()
            guard let result else { fatalError("the worker ran nothing") }
            return result
        }

        func stop() {
            lock.lock()
            stopped = true
            lock.signal()
            lock.unlock()
        }
    }
}
