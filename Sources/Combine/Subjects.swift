import Foundation

/// A publisher you send values through.
public protocol Subject<Output, Failure>: AnyObject, Publisher {
    func send(_ value: Output)
    func send(completion: Subscribers.Completion<Failure>)
}

extension Subject where Output == Void {
    public func send() { send(()) }
}

/// The subscribers of a subject, and whether it has completed. Delivery happens outside the lock,
/// so a subscriber may subscribe or cancel from inside its closure.
final class SubscriberList<Output, Failure: Error>: @unchecked Sendable {
    private struct Entry {
        let completion: (Subscribers.Completion<Failure>) -> Void
        let value: (Output) -> Void
    }

    private let lock = NSLock()
    private var entries: [UInt64: Entry] = [:]
    private var next: UInt64 = 0
    private var completion: Subscribers.Completion<Failure>?

    /// Adds a subscriber; a subject that already completed completes it at once.
    func add(completion: @escaping (Subscribers.Completion<Failure>) -> Void, value: @escaping (Output) -> Void) -> AnyCancellable {
        let (identifier, finished) = lock.withLock { () -> (UInt64?, Subscribers.Completion<Failure>?) in
            if let completion = self.completion { return (nil, completion) }
            next += 1
            entries[next] = Entry(completion: completion, value: value)
            return (next, nil)
        }
        if let finished {
            completion(finished)
            return AnyCancellable {}
        }
        return AnyCancellable { [weak self] in
            guard let self, let identifier else { return }
            self.lock.withLock { _ = self.entries.removeValue(forKey: identifier) }
        }
    }

    func send(_ value: Output) {
        let receivers = lock.withLock { completion == nil ? entries.sorted { $0.key < $1.key }.map(\.value.value) : [] }
        for receive in receivers { receive(value) }
    }

    func finish(_ result: Subscribers.Completion<Failure>) {
        let receivers = lock.withLock { () -> [(Subscribers.Completion<Failure>) -> Void] in
            guard completion == nil else { return [] }
            completion = result
            defer { entries.removeAll() }
            return entries.sorted { $0.key < $1.key }.map(\.value.completion)
        }
        for receive in receivers { receive(result) }
    }
}

/// Broadcasts the values sent to it to its current subscribers.
public final class PassthroughSubject<Output, Failure: Error>: Subject, @unchecked Sendable {
    private let subscribers = SubscriberList<Output, Failure>()

    public init() {}

    public func send(_ value: Output) { subscribers.send(value) }
    public func send(completion: Subscribers.Completion<Failure>) { subscribers.finish(completion) }

    public func subscribe(receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void, receiveValue: @escaping (Output) -> Void) -> AnyCancellable {
        subscribers.add(completion: receiveCompletion, value: receiveValue)
    }
}

/// Holds a value, gives it to each new subscriber, and broadcasts every new one.
public final class CurrentValueSubject<Output, Failure: Error>: Subject, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Output
    private let subscribers = SubscriberList<Output, Failure>()

    public init(_ value: Output) { current = value }

    public var value: Output {
        get { lock.withLock { current } }
        set { send(newValue) }
    }

    public func send(_ value: Output) {
        lock.withLock { current = value }
        subscribers.send(value)
    }

    public func send(completion: Subscribers.Completion<Failure>) { subscribers.finish(completion) }

    public func subscribe(receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void, receiveValue: @escaping (Output) -> Void) -> AnyCancellable {
        receiveValue(value)
        return subscribers.add(completion: receiveCompletion, value: receiveValue)
    }
}
