import CYaml
import DocumentModel

/// Validates a YAML stream with libyaml's event parser (the C library Yams wraps) without building
/// a node tree: every document must parse, every alias must name an anchor defined before it in its
/// document, and no mapping may repeat a scalar key — what Yams's composer checks, at a fraction of
/// its cost (building Swift nodes made a 1 MB document take 350 ms to validate).
struct YAMLValidator {
    struct Problem: Error, CustomStringConvertible {
        /// 1-based, as editors count.
        let line: Int
        let column: Int
        let message: String

        var description: String { "line \(line), column \(column): \(message)" }
    }

    /// A collection being read: a sequence, or a mapping with the keys seen so far and whether the
    /// next node is a key.
    private enum Open {
        case sequence
        case mapping(keys: Set<[UInt8]>, expectingKey: Bool)
    }

    /// libyaml says only that a tab "cannot start any token"; say what it is and why.
    static func tabHint(_ problem: Problem, in data: Data) -> String {
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        guard let line = lines.dropFirst(problem.line - 1).first,
              line.dropFirst(problem.column - 1).first == UInt8(ascii: "\t")
        else { return "" }
        return " — it is a tab: YAML indents with spaces only"
    }

    /// The number of documents in the stream, or the first problem.
    static func validate(_ bytes: UnsafeRawBufferPointer) -> Result<Int, Problem> {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { return .failure(Problem(line: 1, column: 1, message: "out of memory")) }
        defer { yaml_parser_delete(&parser) }
        let start = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        yaml_parser_set_input_string(&parser, start, bytes.count)
        yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)

        var documents = 0
        var anchors = Set<[UInt8]>()
        var open: [Open] = []
        var event = yaml_event_t()
        while true {
            guard yaml_parser_parse(&parser, &event) == 1 else { return .failure(problem(of: parser)) }
            defer { yaml_event_delete(&event) }
            let mark = event.start_mark
            func place(_ message: String) -> Problem {
                Problem(line: Int(mark.line) + 1, column: Int(mark.column) + 1, message: message)
            }
            switch event.type {
            case YAML_STREAM_END_EVENT:
                return .success(documents)
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                anchors.removeAll(keepingCapacity: true)
            case YAML_ALIAS_EVENT:
                let name = bytesOf(event.data.alias.anchor)
                guard anchors.contains(name) else { return .failure(place("the alias *\(String(decoding: name, as: UTF8.self)) names no anchor defined before it")) }
                if let duplicate = nodeEnded(in: &open, key: nil) { return .failure(place(duplicate)) }
            case YAML_SCALAR_EVENT:
                if let anchor = event.data.scalar.anchor { anchors.insert(bytesOf(anchor)) }
                let value = event.data.scalar.value.map { UnsafeBufferPointer(start: $0, count: event.data.scalar.length) }
                if let duplicate = nodeEnded(in: &open, key: value.map(Array.init) ?? []) { return .failure(place(duplicate)) }
            case YAML_SEQUENCE_START_EVENT:
                if let anchor = event.data.sequence_start.anchor { anchors.insert(bytesOf(anchor)) }
                open.append(.sequence)
            case YAML_MAPPING_START_EVENT:
                if let anchor = event.data.mapping_start.anchor { anchors.insert(bytesOf(anchor)) }
                open.append(.mapping(keys: [], expectingKey: true))
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                _ = open.popLast()
                // A collection used as a key is not compared (Yams compares it whole; it is rare).
                if let duplicate = nodeEnded(in: &open, key: nil) { return .failure(place(duplicate)) }
            default:
                break
            }
        }
    }

    /// Records that a node of the innermost open collection is complete: in a mapping, a key (whose
    /// scalar value must be new) or a value. Returns the message for a repeated key.
    private static func nodeEnded(in open: inout [Open], key: [UInt8]?) -> String? {
        guard case .mapping(var keys, let expectingKey)? = open.last else { return nil }
        // Leave `keys` the set's only owner, or every insertion would copy a mapping's keys whole.
        open[open.count - 1] = .sequence
        if expectingKey, let key {
            guard keys.insert(key).inserted else {
                return "the key \(String(decoding: key, as: UTF8.self)) appears twice in one mapping"
            }
        }
        open[open.count - 1] = .mapping(keys: keys, expectingKey: !expectingKey)
        return nil
    }

    private static func bytesOf(_ text: UnsafeMutablePointer<yaml_char_t>) -> [UInt8] {
        Array(UnsafeBufferPointer(start: text, count: length(of: text)))
    }

    private static func problem(of parser: yaml_parser_t) -> Problem {
        let message = parser.problem.map { String(cString: $0) } ?? "not YAML"
        let context = parser.context.map { " (\(String(cString: $0)) at line \(parser.context_mark.line + 1), column \(parser.context_mark.column + 1))" } ?? ""
        return Problem(line: Int(parser.problem_mark.line) + 1, column: Int(parser.problem_mark.column) + 1, message: message + context)
    }
}

private func length(of text: UnsafeMutablePointer<yaml_char_t>) -> Int {
    var length = 0
    while text[length] != 0 { length += 1 }
    return length
}
