import DocumentModel
import Testing

@Suite struct SeedDocumentTests {
    static let validText = Data("Grüße, document! ✓\n".utf8)
    static let invalidUTF8 = Data([0x48, 0x69, 0xFF, 0xFE, 0x21])

    func readConfiguration(_ data: Data) -> FileDocumentReadConfiguration {
        FileDocumentReadConfiguration(contentType: .plainText, file: FileWrapper(regularFileWithContents: data))
    }

    func roundTrip<D: FileDocument>(_: D.Type, _ data: Data) throws -> Data? {
        let document = try D(configuration: readConfiguration(data))
        let written = try document.fileWrapper(configuration: FileDocumentWriteConfiguration(contentType: .plainText, existingFile: nil))
        return written.regularFileContents
    }

    @Test func validUTF8RoundTripsByteForByteThroughEverySeedType() throws {
        #expect(try roundTrip(TextFile.self, Self.validText) == Self.validText)
        #expect(try roundTrip(Note.self, Self.validText) == Self.validText)
        #expect(try roundTrip(TextDoc.self, Self.validText) == Self.validText)
        #expect(try roundTrip(NoteDoc.self, Self.validText) == Self.validText)
        let reference = try NotebookDocument(configuration: readConfiguration(Self.validText))
        let snapshot = try reference.snapshot(contentType: .plainText)
        let wrapper = try reference.fileWrapper(snapshot: snapshot, configuration: .init(contentType: .plainText, existingFile: nil))
        #expect(wrapper.regularFileContents == Self.validText)
    }

    /// A host's `existingFile` is read only when a type asks for it, and once: a plain-text type
    /// rewrites its content whole and never does (each save read the stored file for nothing).
    @Test func theExistingFileIsReadOnlyWhenATypeAsksForIt() throws {
        var reads = 0
        let stored = FileWrapper(regularFileWithContents: Data("old".utf8))
        func configuration() -> FileDocumentWriteConfiguration {
            FileDocumentWriteConfiguration(contentType: .plainText) {
                reads += 1
                return stored
            }
        }
        let document = try TextFile(configuration: readConfiguration(Self.validText))
        #expect(try document.fileWrapper(configuration: configuration()).regularFileContents == Self.validText)
        #expect(reads == 0)
        let asked = configuration()
        #expect(asked.existingFile === stored && asked.existingFile === stored)
        #expect(reads == 1)
        // Kept past its call, a configuration reads nothing: the file is not the replaced one then.
        let kept = configuration()
        kept.endOfCall()
        #expect(kept.existingFile == nil && reads == 1)
    }

    @Test func invalidUTF8IsCorruptWhereThePageSaysSo() {
        for type in [Note.self, NoteDoc.self] as [any FileDocument.Type] {
            #expect(throws: CocoaError(.fileReadCorruptFile)) { _ = try type.init(configuration: readConfiguration(Self.invalidUTF8)) }
        }
        #expect(throws: CocoaError(.fileReadCorruptFile)) { _ = try NotebookDocument(configuration: readConfiguration(Self.invalidUTF8)) }
        // TextFile and TextDoc decode leniently, as their pages write them: replacement characters.
        #expect((try? TextFile(configuration: readConfiguration(Self.invalidUTF8)))?.text == "Hi\u{FFFD}\u{FFFD}!")
        #expect((try? TextDoc(configuration: readConfiguration(Self.invalidUTF8)))?.text == "Hi\u{FFFD}\u{FFFD}!")
    }

    @Test func aDirectoryIsNotAPlainTextNote() {
        let directory = FileWrapper(directoryWithFileWrappers: [:])
        #expect(throws: CocoaError(.fileReadCorruptFile)) {
            _ = try NoteDoc(configuration: FileDocumentReadConfiguration(contentType: .plainText, file: directory))
        }
    }

    @Test func writableContentTypesDefaultToReadable() {
        #expect(TextFile.writableContentTypes == [.plainText])
        #expect(NotebookDocument.writableContentTypes == [.plainText])
    }

    @Test func seed000ConfigurationCompilesAsWrittenAndBindsTheDocument() {
        let config = FileDocumentConfiguration(document: .constant(TextFile(text: "Draft notes")), fileURL: URL(fileURLWithPath: "/Documents/notes.txt"))
        #expect(config.fileURL?.lastPathComponent ?? "Untitled" == "notes.txt")
        #expect(config.isEditable)
        #expect(config.$document.text.wrappedValue == "Draft notes")
        config.$document.text.wrappedValue = "ignored by a constant binding"
        #expect(config.document.text == "Draft notes")

        var stored = TextFile(text: "live")
        let live = FileDocumentConfiguration(
            document: Binding(get: { stored }, set: { stored = $0 }), fileURL: nil, isEditable: false)
        live.$document.text.wrappedValue = "edited through the binding"
        #expect(stored.text == "edited through the binding")
        live.document.text += "!"
        #expect(stored.text == "edited through the binding!")
        #expect(live.fileURL?.lastPathComponent ?? "Untitled" == "Untitled")
        #expect(!live.isEditable)
    }

    @Test func referenceDocumentAnnouncesChangesThroughPublished() {
        let document = NotebookDocument(text: "one")
        var changes = 0
        let subscription = document.objectWillChange.sink { changes += 1 }
        document.text = "two"
        document.text = "three"
        #expect(changes == 2)
        #expect(document.text == "three")
        subscription.cancel()
        document.text = "four"
        #expect(changes == 2)
        let configuration = ReferenceFileDocumentConfiguration(document: document, fileURL: nil)
        #expect(configuration.document.text == "four" && configuration.isEditable)
    }
}
