import Foundation

/// An object that announces changes before they happen, as Combine's does.
public protocol ObservableObject: AnyObject {
    associatedtype ObjectWillChangePublisher: Publisher = ObservableObjectPublisher where ObjectWillChangePublisher.Failure == Never
    var objectWillChange: ObjectWillChangePublisher { get }
}

extension ObservableObject where ObjectWillChangePublisher == ObservableObjectPublisher {
    /// One publisher per object for its whole life, made on first use — whether or not the class
    /// has `@Published` properties (Combine keeps it with the object, so `objectWillChange.send()`
    /// from a class with none reaches the subscribers of an earlier `objectWillChange.sink`).
    public var objectWillChange: ObservableObjectPublisher { ObjectWillChangeTable.publisher(for: self) }
}

/// The publishers of objects that use the default `objectWillChange`, by object. An entry is reused
/// only while its object is alive: an address a dead object had may be a new object's.
enum ObjectWillChangeTable {
    private struct Entry {
        weak var object: AnyObject?
        let publisher: ObservableObjectPublisher
    }

    /// The entries hold weak references to objects of any type, which no Sendable box can; an
    /// NSLock guards them.
    private final class Storage: @unchecked Sendable {
        let lock = NSLock()
        var entries: [ObjectIdentifier: Entry] = [:]
    }

    private static let storage = Storage()

    static func publisher(for object: AnyObject) -> ObservableObjectPublisher {
        storage.lock.withLock {
            let key = ObjectIdentifier(object)
            if let entry = storage.entries[key], entry.object === object { return entry.publisher }
            if storage.entries.count >= 64 && storage.entries.count.nonzeroBitCount == 1 {
                // Now and then (each time the table doubles), forget the objects that are gone.
                storage.entries = storage.entries.filter { $0.value.object != nil }
            }
            let publisher = ObservableObjectPublisher()
            storage.entries[key] = Entry(object: object, publisher: publisher)
            return publisher
        }
    }
}

/// The default publisher of an `ObservableObject`: publishes `()` before each change.
public final class ObservableObjectPublisher: Publisher, @unchecked Sendable {
    public typealias Output = Void
    public typealias Failure = Never

    private let subject = PassthroughSubject<Void, Never>()

    public init() {}

    public func send() { subject.send(()) }

    public func subscribe(receiveCompletion: @escaping (Subscribers.Completion<Never>) -> Void, receiveValue: @escaping (Output) -> Void) -> AnyCancellable {
        subject.subscribe(receiveCompletion: receiveCompletion, receiveValue: receiveValue)
    }
}

/// A property whose changes are announced through the enclosing object's `objectWillChange` and
/// published by `$property`, before they are made — as Combine's `@Published`.
@propertyWrapper
public struct Published<Value> {
    private let box: Box

    private final class Box: @unchecked Sendable {
        let subject: CurrentValueSubject<Value, Never>
        init(_ value: Value) { subject = CurrentValueSubject(value) }
    }

    public init(wrappedValue: Value) { box = Box(wrappedValue) }

    public init(initialValue: Value) { self.init(wrappedValue: initialValue) }

    @available(*, unavailable, message: "@Published is only available on properties of classes")
    public var wrappedValue: Value {
        get { fatalError("@Published outside a class") }
        set { fatalError("@Published outside a class") }
    }

    /// `$property`: the current value on subscription, then each new one as it is set.
    public var projectedValue: Publisher { Publisher(subject: box.subject) }

    public struct Publisher: Combine.Publisher {
        public typealias Output = Value
        public typealias Failure = Never
        fileprivate let subject: CurrentValueSubject<Value, Never>

        public func subscribe(receiveCompletion: @escaping (Subscribers.Completion<Never>) -> Void, receiveValue: @escaping (Value) -> Void) -> AnyCancellable {
            subject.subscribe(receiveCompletion: receiveCompletion, receiveValue: receiveValue)
        }
    }

    public static subscript<EnclosingSelf: AnyObject>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Published<Value>>
    ) -> Value {
        get { object[keyPath: storageKeyPath].box.subject.value }
        set {
            if let observable = object as? any ObservableObject {
                (observable.objectWillChange as? ObservableObjectPublisher)?.send()
            }
            object[keyPath: storageKeyPath].box.subject.send(newValue)
        }
    }
}
