import Foundation

/// libpq's keyword/value form: `keyword = value` pairs separated by spaces, a value in single
/// quotes when empty or holding spaces, `\'` and `\\` inside.
struct KeywordPairs {
    struct Malformed: Error {}

    var items: [(keyword: String, value: String)] = []

    init(_ text: String) throws {
        let characters = Array(text)
        var index = 0
        // libpq's separators are C's isspace: ASCII only.
        func isSpace(_ character: Character) -> Bool { " \t\n\r\u{0B}\u{0C}".contains(character) }
        func skipSpaces() { while index < characters.count, isSpace(characters[index]) { index += 1 } }
        while true {
            skipSpaces()
            guard index < characters.count else { break }
            var keyword = ""
            while index < characters.count, characters[index] != "=", !isSpace(characters[index]) {
                keyword.append(characters[index])
                index += 1
            }
            skipSpaces()
            guard !keyword.isEmpty, index < characters.count, characters[index] == "=" else { throw Malformed() }
            index += 1
            skipSpaces()
            var value = ""
            let quoted = index < characters.count && characters[index] == "'"
            if quoted { index += 1 }
            var closed = !quoted
            while index < characters.count {
                let character = characters[index]
                if character == "\\", index + 1 < characters.count {
                    value.append(characters[index + 1])
                    index += 2
                    continue
                }
                if quoted && character == "'" {
                    closed = true
                    index += 1
                    break
                }
                if !quoted && isSpace(character) { break }
                value.append(character)
                index += 1
            }
            guard closed else { throw Malformed() }
            items.append((keyword, value))
        }
    }

    /// The pairs as libpq reads them.
    var text: String { items.map { Self.pair($0.keyword, $0.value) }.joined(separator: " ") }

    static func pair(_ keyword: String, _ value: String) -> String {
        keyword + "='" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
