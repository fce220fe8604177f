import DocumentModel
import Yams

/// A YAML document or stream (`public.yaml`: `.yaml`, `.yml`): accepted when every document of the
/// stream parses as YAML 1.1 (libyaml, through Yams) — anchors resolve, no tabs in indentation, no
/// unterminated flow collections or quotes — and refused naming the line and column of the first
/// problem. Saved exactly as written.
public struct YAMLDocument: FileDocument {
    public static var readableContentTypes: [UTType] { [.yaml] }

    public private(set) var contents: Data

    /// The number of documents in the stream (`---` separated), counted while validating.
    public let documentCount: Int

    public init(configuration: ReadConfiguration) throws {
        let (data, text) = try configuration.utf8Text(format: "YAML")
        do {
            let parser = try Parser(yaml: text)
            var count = 0
            while try parser.nextRoot() != nil { count += 1 }
            documentCount = count
        } catch let error as YamlError {
            throw refusal("not valid YAML: \(Self.describe(error))\(Self.tabHint(error, in: data))", underlying: error)
        }
        contents = data
    }

    public func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: contents)
    }

    /// libyaml says only that a tab "cannot start any token"; say what it is and why.
    private static func tabHint(_ error: YamlError, in data: Data) -> String {
        guard case let .scanner(_, _, mark, _) = error else { return "" }
        let line = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropFirst(mark.line - 1).first
        guard let line, let character = line.dropFirst(mark.column - 1).first, character == UInt8(ascii: "\t") else { return "" }
        return " — it is a tab: YAML indents with spaces only"
    }

    /// libyaml's problem with its position, without Yams's echo of the offending line.
    private static func describe(_ error: YamlError) -> String {
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _),
             let .composer(context, problem, mark, _):
            let during = context.map { " (\($0.text) at line \($0.mark.line), column \($0.mark.column))" } ?? ""
            return "line \(mark.line), column \(mark.column): \(problem)\(during)"
        case let .reader(problem, offset, _, _):
            return offset.map { "byte offset \($0): \(problem)" } ?? problem
        case let .duplicatedKeysInMapping(duplicates, context):
            return "line \(context.mark.line), column \(context.mark.column): duplicate keys \(duplicates.joined(separator: ", "))"
        default:
            return String(describing: error)
        }
    }
}
