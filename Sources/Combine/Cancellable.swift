import Foundation

/// Something that can be stopped: a subscription.
public protocol Cancellable {
    func cancel()
}

/// A subscription that ends when cancelled or deallocated. Hashable by identity, so subscriptions
/// are kept in a `Set<AnyCancellable>` (`store(in:)`).
public final class AnyCancellable: Cancellable, Hashable, @unchecked Sendable {
    private var cancelAction: (() -> Void)?
    private let lock = NSLock()

    public init(_ cancel: @escaping () -> Void) { cancelAction = cancel }

    public init<C: Cancellable>(_ cancellable: C) { cancelAction = { cancellable.cancel() } }

    public func cancel() {
        let action = lock.withLock { () -> (() -> Void)? in
            defer { cancelAction = nil }
            return cancelAction
        }
        action?()
    }

    public func store(in set: inout Set<AnyCancellable>) { set.insert(self) }

    public func store<C: RangeReplaceableCollection>(in collection: inout C) where C.Element == AnyCancellable {
        collection.append(self)
    }

    deinit { cancel() }

    public static func == (lhs: AnyCancellable, rhs: AnyCancellable) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
