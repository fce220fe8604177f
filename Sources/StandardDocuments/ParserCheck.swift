import DocumentModel
import FoundationXML
import TOMLKit

/// The checks of the built-in types that run a parser written in C or C++ (toml++, libyaml,
/// libxml2, CoreFoundation's property list reader): code that can abort or run away on hostile
/// bytes. A mount runs them in `ParserSandbox`'s helper processes, so a crash refuses one save
/// instead of killing the daemon; elsewhere they run in the calling process.
public enum ParserCheck: UInt8, CaseIterable, Sendable {
    case toml = 1
    case yaml = 2
    case xml = 3
    case propertyList = 4

    /// The parser's name, for refusals ("the TOML parser crashed").
    public var format: String {
        switch self {
        case .toml: "TOML"
        case .yaml: "YAML"
        case .xml: "XML"
        case .propertyList: "property list"
        }
    }

    /// Runs the check on `data` in this process.
    public func evaluate(_ data: Data) -> ParserVerdict {
        switch self {
        case .toml: Self.toml(data)
        case .yaml: Self.yaml(data)
        case .xml: XMLWellFormedness.firstProblem(in: data).map { .refused("not well-formed XML: \($0)") } ?? .accepted(count: 1)
        case .propertyList: Self.propertyList(data)
        }
    }

    private static func toml(_ data: Data) -> ParserVerdict {
        if case .refused(let reason) = tomlControlCharacters(in: data) { return .refused(reason) }
        do {
            _ = try TOMLTable(string: String(decoding: data, as: UTF8.self))
            return .accepted(count: 1)
        } catch let error as TOMLParseError {
            let place = error.source.begin
            return .refused("not valid TOML: line \(place.line), column \(place.column): \(error.description)")
        } catch {
            return .refused("not valid TOML: \(error)")
        }
    }

    /// TOML allows no control character but tab and line breaks, anywhere (keys, strings and
    /// comments alike): refused here, before toml++, which fails an assertion and aborts on one in
    /// a table header (`[[` U+0008 `]]`).
    private static func tomlControlCharacters(in data: Data) -> ParserVerdict {
        let forbidden = data.withUnsafeBytes { bytes in
            bytes.firstIndex { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D || $0 == 0x7F }.map { ($0, TextPosition(of: $0, in: bytes)) }
        }
        guard let (offset, place) = forbidden else { return .accepted(count: 1) }
        let scalar = "U+" + String(format: "%04X", data[data.startIndex + offset])
        return .refused("not valid TOML: \(place): the control character \(scalar) is not allowed in TOML (only tab and line breaks are)")
    }

    private static func yaml(_ data: Data) -> ParserVerdict {
        switch data.withUnsafeBytes({ YAMLValidator.validate($0) }) {
        case .success(let count):
            return .accepted(count: count)
        case .failure(let problem):
            return .refused("not valid YAML: \(problem)\(YAMLValidator.tabHint(problem, in: data))")
        }
    }

    private static func propertyList(_ data: Data) -> ParserVerdict {
        let isBinary = data.starts(with: Array("bplist".utf8))
        if isBinary, let problem = BinaryPropertyListTrailer.problem(in: data) {
            return .refused("not a valid binary property list: \(problem)")
        }
        do {
            _ = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
            return .accepted(count: 1)
        } catch {
            // Foundation names at most a line; for XML, the parser that failed says where exactly.
            if !isBinary, data.firstNonSpaceByte == UInt8(ascii: "<"), let problem = XMLWellFormedness.firstProblem(in: data) {
                return .refused("not a valid XML property list: \(problem)")
            }
            let detail = (error as NSError).userInfo["NSDebugDescription"] as? String ?? "not in a property list format"
            return .refused("not a valid \(isBinary ? "binary " : "")property list: \(detail)")
        }
    }
}

/// What a parser check found: valid (with the number of documents, for a YAML stream), or the
/// reason it refuses the bytes.
public enum ParserVerdict: Sendable, Equatable {
    case accepted(count: Int)
    case refused(String)
}

extension ParserCheck {
    /// The verdict, from where the process has chosen to run the check: a sandbox helper in a
    /// mount, else this process. A crash or a time-out in a helper is thrown, as a refusal.
    public func verdict(_ data: Data) throws -> ParserVerdict {
        guard let sandbox = ParserSandbox.installed else { return evaluate(data) }
        return try sandbox.check(self, data)
    }

    /// Runs the check (see `verdict`) and turns a refusal into the error a document type throws.
    func run(_ data: Data) throws -> Int {
        switch try verdict(data) {
        case .accepted(let count): return count
        case .refused(let reason): throw refusal(reason)
        }
    }
}
