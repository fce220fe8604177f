import Foundation

/// Where `receive(on:)` delivers: runs an action soon, in order.
public protocol Scheduler {
    associatedtype SchedulerOptions = Never
    func schedule(options: SchedulerOptions?, _ action: @escaping () -> Void)
}

extension DispatchQueue: Scheduler {
    public typealias SchedulerOptions = Never
    public func schedule(options: Never?, _ action: @escaping () -> Void) {
        let box = UncheckedBox(action)
        async { box.value() }
    }
}

extension OperationQueue: Scheduler {
    public typealias SchedulerOptions = Never
    public func schedule(options: Never?, _ action: @escaping () -> Void) {
        let box = UncheckedBox(action)
        addOperation { box.value() }
    }
}

extension RunLoop: Scheduler {
    public typealias SchedulerOptions = Never
    public func schedule(options: Never?, _ action: @escaping () -> Void) {
        let box = UncheckedBox(action)
        perform { box.value() }
    }
}

/// Runs actions at once, on the calling thread.
public struct ImmediateScheduler: Scheduler, Sendable {
    public typealias SchedulerOptions = Never
    public static let shared = ImmediateScheduler()
    public func schedule(options: Never?, _ action: @escaping () -> Void) { action() }
}
