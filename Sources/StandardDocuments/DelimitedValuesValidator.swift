import SystemSupport

/// Checks comma- and tab-separated values, in one pass over the bytes, and says where the first
/// problem is. The rules DocFS chose, as written in the man page:
///
/// - Records end with a line feed or CR LF; the last record's line break is optional. A blank line
///   is a record with one empty field.
/// - Every record has as many fields as the first.
/// - CSV (RFC 4180): a field that starts with `"` is quoted and runs to the next `"` not doubled
///   (`""` is a literal quote); a quoted field may hold separators and line breaks, and must be
///   followed by a separator or the end of the record. A `"` inside an unquoted field is refused.
/// - TSV (the IANA text/tab-separated-values registration): fields are separated by tabs and hold
///   no tabs or line breaks; there is no quoting, so `"` is an ordinary character.
struct DelimitedValuesValidator {
    enum Dialect {
        case commaSeparated
        case tabSeparated

        var separator: UInt8 { self == .commaSeparated ? UInt8(ascii: ",") : UInt8(ascii: "\t") }
    }

    struct Problem: Error, CustomStringConvertible {
        let offset: Int
        let message: String
        /// Filled in from the bytes when the problem is reported.
        var position = ""

        var description: String { "\(position): \(message)" }
    }

    let dialect: Dialect

    func validate(_ bytes: UnsafeRawBufferPointer) -> Problem? {
        let separator = dialect.separator
        let quote = UInt8(ascii: "\""), lineFeed = UInt8(ascii: "\n"), carriageReturn = UInt8(ascii: "\r")
        let quoting = dialect == .commaSeparated
        var index = 0
        let count = bytes.count
        var expectedFields: Int?
        var recordLine = 1, line = 1
        var fields = 1
        var nextRelease = validationWindow

        func endOfLine(at index: Int) -> Int? {
            if bytes[index] == lineFeed { return 1 }
            if bytes[index] == carriageReturn, index + 1 < count, bytes[index + 1] == lineFeed { return 2 }
            return nil
        }
        func locate(_ problem: Problem) -> Problem {
            var located = problem
            located.position = TextPosition(of: problem.offset, in: bytes).description
            return located
        }

        while index < count {
            if index >= nextRelease {
                MappedRegions.releasePages(of: bytes, before: index)
                nextRelease += validationWindow
            }
            // One field, starting at `index`.
            if quoting, bytes[index] == quote {
                let opening = index
                index += 1
                while true {
                    guard index < count else {
                        return locate(Problem(offset: opening, message: "unbalanced quote: this quoted field is never closed"))
                    }
                    let byte = bytes[index]
                    if byte == quote {
                        if index + 1 < count, bytes[index + 1] == quote {
                            index += 2
                            continue
                        }
                        index += 1
                        break
                    }
                    if byte == lineFeed { line += 1 }
                    index += 1
                }
                if index < count, bytes[index] != separator, endOfLine(at: index) == nil {
                    return locate(Problem(offset: index, message: "text after a closing quote (a quote inside a quoted field is written \"\")"))
                }
            } else {
                while index < count, bytes[index] != separator, endOfLine(at: index) == nil {
                    if quoting, bytes[index] == quote {
                        return locate(Problem(offset: index, message: "a quote inside an unquoted field (quote the whole field and double the quote)"))
                    }
                    index += 1
                }
            }
            // What ends the field: a separator, the end of the record, or the end of the document.
            if index < count, bytes[index] == separator {
                fields += 1
                index += 1
                if index == count { return checkFields(fields, line: recordLine, expected: &expectedFields, at: index).map(locate) }
                continue
            }
            if let problem = checkFields(fields, line: recordLine, expected: &expectedFields, at: index) { return locate(problem) }
            guard index < count, let breakLength = endOfLine(at: index) else { break }
            index += breakLength
            line += 1
            recordLine = line
            fields = 1
        }
        return nil
    }

    private func checkFields(_ fields: Int, line: Int, expected: inout Int?, at offset: Int) -> Problem? {
        guard let expected else {
            expected = fields
            return nil
        }
        guard fields != expected else { return nil }
        let what = dialect == .commaSeparated ? "comma-separated" : "tab-separated"
        return Problem(offset: offset, message: "the record on line \(line) has \(fields) \(what) fields, the first record has \(expected)")
    }
}
