import Foundation

/// What a document's `init(configuration:)` receives: the matched content type and the file.
public struct FileDocumentReadConfiguration {
    public let contentType: UTType
    public let file: FileWrapper

    /// For hosts: SwiftUI builds this itself; on Linux the host (DocFS, a test, a tool) does.
    public init(contentType: UTType, file: FileWrapper) {
        self.contentType = contentType
        self.file = file
    }
}

/// What a document's `fileWrapper(configuration:)` receives: the content type to write and the
/// file being replaced (nil when the document was never saved), to carry unchanged parts forward.
public struct FileDocumentWriteConfiguration {
    public let contentType: UTType
    /// Read as Apple's `let` is; a host may have it read when the document first asks for it
    /// (most types rewrite their content whole and never do).
    public var existingFile: FileWrapper? { existing.wrapper }
    private let existing: ExistingFile

    public init(contentType: UTType, existingFile: FileWrapper?) {
        self.contentType = contentType
        existing = ExistingFile { existingFile }
    }

    /// For hosts: `existingFile` is `read` when first asked for, once, until `endOfCall()`.
    public init(contentType: UTType, readingExistingFile read: @escaping () -> FileWrapper?) {
        self.contentType = contentType
        existing = ExistingFile(read)
    }

    /// For hosts: the call this configuration was made for has returned (see `ExistingFile.seal`).
    public func endOfCall() { existing.seal() }
}

/// `FileDocumentWriteConfiguration.existingFile`, read at most once, under a lock: a type may read
/// it from several threads of its own within the call (Apple's `let` allows that).
private final class ExistingFile {
    private let lock = NSLock()
    private var read: (() -> FileWrapper?)?
    private var value: FileWrapper?

    init(_ read: @escaping () -> FileWrapper?) { self.read = read }

    var wrapper: FileWrapper? {
        lock.lock()
        defer { lock.unlock() }
        if let read {
            value = read()
            self.read = nil
        }
        return value
    }

    /// After the call it was made for, the file it would read is not the one replaced any more: a
    /// configuration a type kept answers what it read during the call, or nil.
    func seal() {
        lock.lock()
        defer { lock.unlock() }
        read = nil
    }
}

/// The properties of an open value-type document: a binding to the live document, where it lives,
/// and whether it may be changed.
public struct FileDocumentConfiguration<Document: FileDocument> {
    @Binding public var document: Document
    /// The document's location, nil for a new, unsaved document.
    public let fileURL: URL?
    /// False on read-only mounts and for documents that cannot be written back.
    public let isEditable: Bool

    public init(document: Binding<Document>, fileURL: URL?, isEditable: Bool = true) {
        self._document = document
        self.fileURL = fileURL
        self.isEditable = isEditable
    }
}

/// The properties of an open reference-type document: the document as an observed object, so
/// `configuration.$document.text` is a binding, as in SwiftUI.
public struct ReferenceFileDocumentConfiguration<Document: ReferenceFileDocument> {
    @ObservedObject public var document: Document
    public let fileURL: URL?
    public let isEditable: Bool

    public init(document: Document, fileURL: URL?, isEditable: Bool = true) {
        self._document = ObservedObject(wrappedValue: document)
        self.fileURL = fileURL
        self.isEditable = isEditable
    }
}
