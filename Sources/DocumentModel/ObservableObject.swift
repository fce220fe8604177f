import Foundation

/// Combine's `ObservableObject`, which Linux lacks: an object that announces changes before they
/// happen. Enough of it for `class MyDocument: ReferenceFileDocument` with `@Published` properties
/// to compile and behave as on Apple platforms.
public protocol ObservableObject: AnyObject {
    associatedtype ObjectWillChangePublisher: ObjectWillChangeSending = ObservableObjectPublisher
    var objectWillChange: ObjectWillChangePublisher { get }
}

/// What an `objectWillChange` publisher must do for `@Published` to drive it.
public protocol ObjectWillChangeSending: AnyObject {
    func send()
}

extension ObservableObject where ObjectWillChangePublisher == ObservableObjectPublisher {
    /// The publisher shared by all the object's `@Published` properties, made on first use
    /// (Combine synthesizes it the same way).
    public var objectWillChange: ObservableObjectPublisher {
        var found: ObservableObjectPublisher?
        var unassigned: [PublishedStorage] = []
        for child in Mirror(reflecting: self).children {
            guard let storage = (child.value as? PublishedProperty)?.publishedStorage else { continue }
            if let publisher = storage.publisher { found = publisher } else { unassigned.append(storage) }
        }
        let publisher = found ?? ObservableObjectPublisher()
        for storage in unassigned { storage.publisher = publisher }
        return publisher
    }
}

/// Sends "will change" to its subscribers.
public final class ObservableObjectPublisher: ObjectWillChangeSending, @unchecked Sendable {
    private let lock = NSLock()
    private var subscribers: [UInt64: () -> Void] = [:]
    private var nextIdentifier: UInt64 = 0

    public init() {}

    public func send() {
        for subscriber in lock.withLock({ Array(subscribers.values) }) { subscriber() }
    }

    /// Calls `receiveValue` before every change until the returned token is cancelled or released.
    public func sink(receiveValue: @escaping () -> Void) -> AnyCancellable {
        let identifier = lock.withLock {
            nextIdentifier += 1
            subscribers[nextIdentifier] = receiveValue
            return nextIdentifier
        }
        return AnyCancellable { [weak self] in
            guard let self else { return }
            self.lock.withLock { _ = self.subscribers.removeValue(forKey: identifier) }
        }
    }
}

/// A subscription that ends when cancelled or deallocated.
public final class AnyCancellable: Hashable, @unchecked Sendable {
    private var cancelAction: (() -> Void)?
    private let lock = NSLock()

    public init(_ cancel: @escaping () -> Void) { cancelAction = cancel }

    public func cancel() {
        let action = lock.withLock { () -> (() -> Void)? in
            defer { cancelAction = nil }
            return cancelAction
        }
        action?()
    }

    public func store(in set: inout Set<AnyCancellable>) { set.insert(self) }

    deinit { cancel() }

    public static func == (lhs: AnyCancellable, rhs: AnyCancellable) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// Combine's `@Published`: a property whose changes are announced through the enclosing object's
/// `objectWillChange` before they are made.
@propertyWrapper
public struct Published<Value> {
    private let storage: PublishedStorage
    private let box: ValueBox

    private final class ValueBox: @unchecked Sendable {
        var value: Value
        init(_ value: Value) { self.value = value }
    }

    public init(wrappedValue: Value) {
        storage = PublishedStorage()
        box = ValueBox(wrappedValue)
    }

    @available(*, unavailable, message: "@Published is only available on properties of classes")
    public var wrappedValue: Value {
        get { fatalError("@Published outside a class") }
        set { fatalError("@Published outside a class") }
    }

    /// The value as seen from its enclosing object, announcing each set through `objectWillChange`.
    public static subscript<EnclosingSelf: AnyObject>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Published<Value>>
    ) -> Value {
        get { object[keyPath: storageKeyPath].box.value }
        set {
            if let observable = object as? any ObservableObject {
                observable.objectWillChange.send()
            }
            object[keyPath: storageKeyPath].box.value = newValue
        }
    }
}

/// Type-erased access to a `@Published` property's shared publisher slot.
protocol PublishedProperty {
    var publishedStorage: PublishedStorage { get }
}

extension Published: PublishedProperty {
    var publishedStorage: PublishedStorage { storage }
}

final class PublishedStorage: @unchecked Sendable {
    var publisher: ObservableObjectPublisher?
}
