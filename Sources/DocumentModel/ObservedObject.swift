/// SwiftUI's `@ObservedObject`, for document hosts: the object itself, and through `$object`,
/// bindings to its properties (`configuration.$document.title`).
@propertyWrapper
public struct ObservedObject<ObjectType: ObservableObject> {
    /// `$object`: bindings to the object's writable properties.
    @dynamicMemberLookup
    public struct Wrapper {
        let root: ObjectType

        public subscript<Subject>(dynamicMember keyPath: ReferenceWritableKeyPath<ObjectType, Subject>) -> Binding<Subject> {
            let root = root
            return Binding(get: { root[keyPath: keyPath] }, set: { root[keyPath: keyPath] = $0 })
        }
    }

    public var wrappedValue: ObjectType

    public init(wrappedValue: ObjectType) { self.wrappedValue = wrappedValue }

    public init(initialValue: ObjectType) { self.init(wrappedValue: initialValue) }

    public var projectedValue: Wrapper { Wrapper(root: wrappedValue) }
}
