// Written as for an Apple app: SwiftUI, UniformTypeIdentifiers and Combine, no Linux-only code.
import Combine
import SwiftUI
import UniformTypeIdentifiers

extension UTType {
    static let story = UTType(exportedAs: "com.example.story")
    static let scrapbook = UTType(exportedAs: "com.example.scrapbook", conformingTo: .package)
}

struct StoryDocument: FileDocument {
    static var readableContentTypes: [UTType] { [.story] }

    var text: String

    init(text: String = "Once upon a time") {
        self.text = text
    }

    init(configuration: ReadConfiguration) throws {
        guard let data = configuration.file.regularFileContents, let string = String(data: data, encoding: .utf8) else {
            throw CocoaError(.fileReadCorruptFile)
        }
        text = string
    }

    func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: Data(text.utf8))
    }
}

/// A package: notes.txt, and an images folder carried forward from the file being replaced.
struct ScrapbookDocument: FileDocument {
    static var readableContentTypes: [UTType] { [.scrapbook] }

    var notes: String
    private var images: FileWrapper?

    init(notes: String = "") {
        self.notes = notes
    }

    init(configuration: ReadConfiguration) throws {
        guard let children = configuration.file.fileWrappers,
              let data = children["notes.txt"]?.regularFileContents,
              let notes = String(data: data, encoding: .utf8)
        else { throw CocoaError(.fileReadCorruptFile) }
        self.notes = notes
        images = children["images"]
    }

    func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        // Unchanged images are reused from the existing file rather than written again.
        let images = configuration.existingFile?.fileWrappers?["images"] ?? images
            ?? FileWrapper(directoryWithFileWrappers: [:])
        return FileWrapper(directoryWithFileWrappers: [
            "notes.txt": FileWrapper(regularFileWithContents: Data(notes.utf8)),
            "images": images,
        ])
    }
}

/// A reference document with no @Published property: it announces changes itself.
final class TallyDocument: ReferenceFileDocument, @unchecked Sendable {
    static var readableContentTypes: [UTType] { [.plainText] }

    private(set) var count: Int
    let changes = PassthroughSubject<Int, Never>()

    init(count: Int = 0) {
        self.count = count
    }

    required init(configuration: ReadConfiguration) throws {
        guard let data = configuration.file.regularFileContents,
              let count = Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw CocoaError(.fileReadCorruptFile) }
        self.count = count
    }

    func increment() {
        objectWillChange.send()
        count += 1
        changes.send(count)
    }

    func snapshot(contentType: UTType) throws -> Int { count }

    func fileWrapper(snapshot: Int, configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: Data("\(snapshot)\n".utf8))
    }
}

/// A reference document observed through @Published.
final class DraftDocument: ReferenceFileDocument, @unchecked Sendable {
    static var readableContentTypes: [UTType] { [.story] }

    @Published var text: String
    private var subscriptions = Set<AnyCancellable>()

    init(text: String = "") {
        self.text = text
    }

    required init(configuration: ReadConfiguration) throws {
        guard let data = configuration.file.regularFileContents, let string = String(data: data, encoding: .utf8) else {
            throw CocoaError(.fileReadCorruptFile)
        }
        text = string
    }

    /// Keeps `title` in step with the first line of the text.
    func trackTitle(into title: @escaping (String) -> Void) {
        $text
            .map { $0.split(separator: "\n").first.map(String.init) ?? "" }
            .removeDuplicates()
            .receive(on: ImmediateScheduler.shared)
            .sink { title($0) }
            .store(in: &subscriptions)
    }

    func snapshot(contentType: UTType) throws -> String { text }

    func fileWrapper(snapshot: String, configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: Data(snapshot.utf8))
    }
}

#if canImport(SwiftUI)
let swiftUIIsAvailable = true
#else
let swiftUIIsAvailable = false
#endif

#if canImport(UniformTypeIdentifiers) && canImport(Combine)
let typeModulesAreAvailable = true
#else
let typeModulesAreAvailable = false
#endif
