import Foundation

/// Combine's `Publisher`, reduced to what document types use: values delivered to closures until
/// the subscription is cancelled. Adopting it outside this module means implementing `subscribe`,
/// which is DocFS's form of Combine's `receive(subscriber:)` (no demand: every value is delivered).
public protocol Publisher<Output, Failure> {
    associatedtype Output
    associatedtype Failure: Error

    /// Delivers values to `receiveValue` and the end to `receiveCompletion` until cancelled.
    func subscribe(
        receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void,
        receiveValue: @escaping (Output) -> Void
    ) -> AnyCancellable
}

/// Namespace of Combine's subscriber types; here, the completion a subscriber receives.
public enum Subscribers {
    public enum Completion<Failure: Error> {
        case finished
        case failure(Failure)
    }
}

/// Namespace of Combine's operator publishers.
public enum Publishers {}

extension Publisher {
    /// Calls `receiveValue` with every value and `receiveCompletion` at the end.
    public func sink(
        receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void,
        receiveValue: @escaping (Output) -> Void
    ) -> AnyCancellable {
        subscribe(receiveCompletion: receiveCompletion, receiveValue: receiveValue)
    }

    public func map<Mapped>(_ transform: @escaping (Output) -> Mapped) -> AnyPublisher<Mapped, Failure> {
        AnyPublisher { completion, value in subscribe(receiveCompletion: completion) { value(transform($0)) } }
    }

    public func compactMap<Mapped>(_ transform: @escaping (Output) -> Mapped?) -> AnyPublisher<Mapped, Failure> {
        AnyPublisher { completion, value in subscribe(receiveCompletion: completion) { transform($0).map(value) } }
    }

    public func filter(_ isIncluded: @escaping (Output) -> Bool) -> AnyPublisher<Output, Failure> {
        AnyPublisher { completion, value in subscribe(receiveCompletion: completion) { if isIncluded($0) { value($0) } } }
    }

    /// Skips the first `count` values.
    public func dropFirst(_ count: Int = 1) -> AnyPublisher<Output, Failure> {
        AnyPublisher { completion, value in
            let remaining = Counter(count)
            return subscribe(receiveCompletion: completion) { if remaining.take() { value($0) } }
        }
    }

    /// Delivers values and the completion on `scheduler` (a `DispatchQueue`, `RunLoop`,
    /// `OperationQueue` or `ImmediateScheduler`).
    public func receive<S: Scheduler>(on scheduler: S, options: S.SchedulerOptions? = nil) -> AnyPublisher<Output, Failure> {
        AnyPublisher { completion, value in
            subscribe(
                receiveCompletion: { result in
                    let box = UncheckedBox(result)
                    scheduler.schedule(options: options) { completion(box.value) }
                },
                receiveValue: { output in
                    let box = UncheckedBox(output)
                    scheduler.schedule(options: options) { value(box.value) }
                })
        }
    }

    public func eraseToAnyPublisher() -> AnyPublisher<Output, Failure> {
        AnyPublisher { completion, value in subscribe(receiveCompletion: completion, receiveValue: value) }
    }
}

extension Publisher where Failure == Never {
    /// Calls `receiveValue` with every value: `objectWillChange.sink { _ in … }`, `$text.sink { … }`.
    public func sink(receiveValue: @escaping (Output) -> Void) -> AnyCancellable {
        subscribe(receiveCompletion: { _ in }, receiveValue: receiveValue)
    }

    /// Sets `object[keyPath:]` to every value.
    public func assign<Root: AnyObject>(to keyPath: ReferenceWritableKeyPath<Root, Output>, on object: Root) -> AnyCancellable {
        subscribe(receiveCompletion: { _ in }) { object[keyPath: keyPath] = $0 }
    }
}

extension Publisher where Output: Equatable {
    /// Skips a value equal to the one before it.
    public func removeDuplicates() -> AnyPublisher<Output, Failure> {
        AnyPublisher { completion, value in
            let last = LastValue<Output>()
            return subscribe(receiveCompletion: completion) { if last.replace(with: $0) { value($0) } }
        }
    }
}

/// A publisher made of a subscribe function: what the operators return.
public struct AnyPublisher<Output, Failure: Error>: Publisher {
    private let subscribeFunction: (@escaping (Subscribers.Completion<Failure>) -> Void, @escaping (Output) -> Void) -> AnyCancellable

    public init(_ subscribe: @escaping (@escaping (Subscribers.Completion<Failure>) -> Void, @escaping (Output) -> Void) -> AnyCancellable) {
        subscribeFunction = subscribe
    }

    public init<P: Publisher>(_ publisher: P) where P.Output == Output, P.Failure == Failure {
        subscribeFunction = { completion, value in publisher.subscribe(receiveCompletion: completion, receiveValue: value) }
    }

    public func subscribe(
        receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void,
        receiveValue: @escaping (Output) -> Void
    ) -> AnyCancellable {
        subscribeFunction(receiveCompletion, receiveValue)
    }
}

/// Publishes one value, then finishes.
public struct Just<Output>: Publisher {
    public typealias Failure = Never
    public let output: Output

    public init(_ output: Output) { self.output = output }

    public func subscribe(receiveCompletion: @escaping (Subscribers.Completion<Never>) -> Void, receiveValue: @escaping (Output) -> Void) -> AnyCancellable {
        receiveValue(output)
        receiveCompletion(.finished)
        return AnyCancellable {}
    }
}

/// A value carried across a scheduler hop. Combine makes no Sendable promise for values either.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var remaining: Int
    init(_ count: Int) { remaining = count }
    /// Whether the value passes (the first `count` do not).
    func take() -> Bool {
        lock.withLock {
            if remaining > 0 { remaining -= 1; return false }
            return true
        }
    }
}

private final class LastValue<Value: Equatable>: @unchecked Sendable {
    private let lock = NSLock()
    private var last: Value?
    /// Stores `value`; whether it differs from the one before.
    func replace(with value: Value) -> Bool {
        lock.withLock {
            defer { last = value }
            return last != value
        }
    }
}
