import DocumentModel
import DocumentStore
import PostgresDocumentStore
import StandardDocuments
import TypeConfiguration

/// What DocFS reads from bytes anyone can write, one entry point each: the built-in document types
/// (the four whose parsers are C or C++, and the ones written in Swift), `FileWrapper`'s
/// serialized form, the type configuration, the quarantine's notes and a PostgreSQL store's rows. Each takes any bytes; a
/// refusal is an answer, a crash or a hang is a bug.
enum FuzzTarget: String, CaseIterable {
    case toml, yaml, xml, plist, json, csv, tsv, text
    case archive, configuration, note, row

    /// Runs the target on `data`. The four C and C++ parsers run where `ParserCheck` puts them: in
    /// this process while fuzzing (so libFuzzer sees their crashes), in a helper when replaying.
    func run(_ data: Data) {
        switch self {
        case .toml: decode(TOMLDocument.self, data, as: .toml)
        case .yaml: decode(YAMLDocument.self, data, as: .yaml)
        case .xml: decode(XMLTextDocument.self, data, as: .xml)
        case .plist: decode(PropertyListDocument.self, data, as: .propertyList)
        case .json: decode(JSONDocument.self, data, as: .json)
        case .csv: decode(DelimitedTextDocument.self, data, as: .commaSeparatedText)
        case .tsv: decode(DelimitedTextDocument.self, data, as: .tabSeparatedText)
        case .text: decode(PlainTextDocument.self, data, as: .plainText)
        case .archive:
            // What decodes must encode again to a wrapper that decodes.
            if let wrapper = FileWrapper(serializedRepresentation: data), let again = wrapper.serializedRepresentation {
                _ = FileWrapper(serializedRepresentation: again)
            }
        case .configuration:
            _ = try? TypeConfiguration.parse(String(decoding: data, as: UTF8.self), path: "fuzz.toml")
        case .note:
            _ = Quarantine.Note(parsing: data)
        case .row:
            RowDecodingCheck.mirror(encodedRows: data)
        }
    }

    private func decode<Document: FileDocument>(_ type: Document.Type, _ data: Data, as contentType: UTType) {
        let configuration = FileDocumentReadConfiguration(contentType: contentType, file: FileWrapper(regularFileWithContents: data))
        guard let document = try? Document(configuration: configuration) else { return }
        // An accepted document must also save.
        _ = try? document.fileWrapper(configuration: FileDocumentWriteConfiguration(contentType: contentType, existingFile: nil))
    }
}
