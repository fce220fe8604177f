/// A value-type document that reads itself from and writes itself to a `FileWrapper`
/// (SwiftUI's `FileDocument`, on Linux).
@preconcurrency
public protocol FileDocument: Sendable {
    /// The types the document can read; a host routes only files of these types to it.
    static var readableContentTypes: [UTType] { get }
    /// The types the document can write; by default the readable ones.
    static var writableContentTypes: [UTType] { get }

    /// Decodes the document; throws (e.g. `CocoaError(.fileReadCorruptFile)`) when the content is not valid.
    init(configuration: ReadConfiguration) throws

    /// Encodes the document for saving.
    func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper

    typealias ReadConfiguration = FileDocumentReadConfiguration
    typealias WriteConfiguration = FileDocumentWriteConfiguration
}

extension FileDocument {
    public static var writableContentTypes: [UTType] { readableContentTypes }
}

/// A reference-type document (SwiftUI's `ReferenceFileDocument`, on Linux). The host takes a
/// `snapshot(contentType:)` and serializes it with `fileWrapper(snapshot:configuration:)`, both
/// off the main thread, so conformers must be thread-safe.
@preconcurrency
public protocol ReferenceFileDocument: ObservableObject, Sendable {
    associatedtype Snapshot

    static var readableContentTypes: [UTType] { get }
    static var writableContentTypes: [UTType] { get }

    init(configuration: ReadConfiguration) throws
    func snapshot(contentType: UTType) throws -> Snapshot
    func fileWrapper(snapshot: Snapshot, configuration: WriteConfiguration) throws -> FileWrapper

    typealias ReadConfiguration = FileDocumentReadConfiguration
    typealias WriteConfiguration = FileDocumentWriteConfiguration
}

extension ReferenceFileDocument {
    public static var writableContentTypes: [UTType] { readableContentTypes }
}
