import DocumentModel
import Yams

/// A YAML document or stream (`public.yaml`: `.yaml`, `.yml`): accepted when every document of the
/// stream parses as YAML 1.1 (libyaml, the parser Yams wraps), its aliases name anchors defined
/// before them and no mapping repeats a key; refused naming the line and column of the first
/// problem. Saved exactly as written.
public struct YAMLDocument: FileDocument {
    public static var readableContentTypes: [UTType] { [.yaml] }

    public private(set) var contents: Data

    /// The number of documents in the stream (`---` separated), counted while validating.
    public let documentCount: Int

    /// The stream's documents as Yams nodes (built on demand: validating builds none).
    public func nodes() throws -> [Node] {
        Array(try compose_all(yaml: String(decoding: contents, as: UTF8.self)))
    }

    public init(configuration: ReadConfiguration) throws {
        let data = try configuration.utf8Bytes(format: "YAML")
        documentCount = try ParserCheck.yaml.run(data)
        contents = data
    }

    public func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: contents)
    }
}
