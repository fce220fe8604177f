import SystemSupport

/// Why a document is not JSON, and where.
public struct JSONSyntaxError: Error, CustomStringConvertible, Sendable {
    public let line: Int
    public let column: Int
    public let offset: Int
    public let message: String

    public var description: String { "line \(line), column \(column): \(message)" }
}

/// Strict RFC 8259 validation in one pass over the bytes, with memory bounded by the nesting depth
/// (one bit per level), not the document's size: no value is built. Refuses what lenient parsers
/// let through — trailing commas, leading zeros, control characters and invalid UTF-8 in strings,
/// bad escapes, content after the value. A leading UTF-8 byte order mark is ignored, as RFC 8259
/// allows; any value may stand at the top level.
enum JSONValidator {
    private enum Expecting {
        case value
        /// Right after `[`: a value or `]`.
        case valueOrArrayEnd
        /// Right after `{`: a key or `}`.
        case keyOrObjectEnd
        /// After `,` in an object.
        case key
        case colon
        /// After a complete value: `,`, the end of its container, or the end of the document.
        case separatorOrEnd
    }

    static func validate(_ bytes: UnsafeRawBufferPointer) throws(JSONSyntaxError) {
        let count = bytes.count
        var index = 0
        if count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        // Open containers, innermost last: a set bit is an object, a clear one an array.
        var containers: [UInt64] = []
        var depth = 0
        var expecting = Expecting.value
        var nextRelease = validationWindow

        func fail(_ message: String, at offset: Int) -> JSONSyntaxError {
            let position = TextPosition(of: offset, in: bytes)
            return JSONSyntaxError(line: position.line, column: position.column, offset: offset, message: message)
        }
        func found(_ offset: Int) -> String { describeByte(at: offset, in: bytes) }
        func innermostIsObject() -> Bool {
            let level = depth - 1
            return containers[level >> 6] & (1 << UInt64(level & 63)) != 0
        }
        func open(object: Bool) {
            let level = depth
            if level >> 6 == containers.count { containers.append(0) }
            let bit: UInt64 = 1 << UInt64(level & 63)
            if object { containers[level >> 6] |= bit } else { containers[level >> 6] &= ~bit }
            depth += 1
        }

        while true {
            if index >= nextRelease {
                MappedRegions.releasePages(of: bytes, before: index)
                nextRelease += validationWindow
            }
            index = skippingWhitespace(bytes, from: index)
            guard index < count else { break }
            let byte = bytes[index]
            switch expecting {
            case .value, .valueOrArrayEnd:
                if expecting == .valueOrArrayEnd && byte == UInt8(ascii: "]") {
                    depth -= 1
                    index += 1
                    expecting = .separatorOrEnd
                    continue
                }
                switch byte {
                case UInt8(ascii: "{"):
                    open(object: true)
                    index += 1
                    expecting = .keyOrObjectEnd
                case UInt8(ascii: "["):
                    open(object: false)
                    index += 1
                    expecting = .valueOrArrayEnd
                case UInt8(ascii: "\""):
                    index = try endOfString(bytes, from: index, fail: fail)
                    expecting = .separatorOrEnd
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    index = try endOfNumber(bytes, from: index, fail: fail)
                    expecting = .separatorOrEnd
                case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                    let literal: StaticString = byte == UInt8(ascii: "t") ? "true" : byte == UInt8(ascii: "f") ? "false" : "null"
                    let length = literal.utf8CodeUnitCount
                    let matches = index + length <= count && (0..<length).allSatisfy { bytes[index + $0] == literal.utf8Start[$0] }
                    guard matches else { throw fail("expected \(literal), found \(found(index))", at: index) }
                    index += length
                    expecting = .separatorOrEnd
                default:
                    let context = depth == 0 ? "" : innermostIsObject() ? " for a member" : " in an array"
                    throw fail("expected a value\(context), found \(found(index))", at: index)
                }
            case .keyOrObjectEnd, .key:
                if expecting == .keyOrObjectEnd && byte == UInt8(ascii: "}") {
                    depth -= 1
                    index += 1
                    expecting = .separatorOrEnd
                    continue
                }
                guard byte == UInt8(ascii: "\"") else {
                    let what = expecting == .key && byte == UInt8(ascii: "}") ? "expected a key after ',' (a trailing comma is not JSON)" : "expected a string key"
                    throw fail("\(what), found \(found(index))", at: index)
                }
                index = try endOfString(bytes, from: index, fail: fail)
                expecting = .colon
            case .colon:
                guard byte == UInt8(ascii: ":") else { throw fail("expected ':' after a key, found \(found(index))", at: index) }
                index += 1
                expecting = .value
            case .separatorOrEnd:
                guard depth > 0 else { throw fail("unexpected \(found(index)) after the JSON value", at: index) }
                let inObject = innermostIsObject()
                if byte == UInt8(ascii: ",") {
                    index += 1
                    expecting = inObject ? .key : .value
                    // `[1,]`: the value after a comma is required.
                    if !inObject {
                        let next = skippingWhitespace(bytes, from: index)
                        if next < count, bytes[next] == UInt8(ascii: "]") {
                            throw fail("expected a value after ',' (a trailing comma is not JSON), found ']'", at: next)
                        }
                    }
                } else if byte == (inObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    depth -= 1
                    index += 1
                } else {
                    let closer = inObject ? "'}'" : "']'"
                    throw fail("expected ',' or \(closer), found \(found(index))", at: index)
                }
            }
        }
        if expecting != .separatorOrEnd || depth > 0 {
            let what = depth > 0 ? "\(depth) unclosed \(depth == 1 ? "array or object" : "arrays or objects")" : "no JSON value"
            throw fail("the document ends early: \(what)", at: count)
        }
    }

    /// The index of the first byte at or after `index` that is not JSON whitespace.
    private static func skippingWhitespace(_ bytes: UnsafeRawBufferPointer, from index: Int) -> Int {
        var index = index
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
            index += 1
        }
        return index
    }

    /// The index after the string that starts (with its quote) at `start`.
    private static func endOfString(
        _ bytes: UnsafeRawBufferPointer, from start: Int, fail: (String, Int) -> JSONSyntaxError
    ) throws(JSONSyntaxError) -> Int {
        var index = start + 1
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { return index + 1 }
            if byte == UInt8(ascii: "\\") {
                guard index + 1 < count else { break }
                switch bytes[index + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 2
                case UInt8(ascii: "u"):
                    guard index + 6 <= count, (2..<6).allSatisfy({ isHexDigit(bytes[index + $0]) }) else {
                        throw fail("a \\u escape needs four hexadecimal digits", index)
                    }
                    index += 6
                default:
                    throw fail("invalid escape \\\(describeByte(at: index + 1, in: bytes)) in a string", index)
                }
            } else if byte < 0x20 {
                throw fail("a control character (\(describeByte(at: index, in: bytes))) must be escaped in a string", index)
            } else if byte >= 0x80 {
                guard let length = utf8SequenceLength(bytes, at: index) else { throw fail("invalid UTF-8 (\(describeByte(at: index, in: bytes))) in a string", index) }
                index += length
            } else {
                index += 1
            }
        }
        throw fail("a string is not closed", start)
    }

    /// The index after the number starting at `start`: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private static func endOfNumber(
        _ bytes: UnsafeRawBufferPointer, from start: Int, fail: (String, Int) -> JSONSyntaxError
    ) throws(JSONSyntaxError) -> Int {
        var index = start
        let count = bytes.count
        func isDigit(_ offset: Int) -> Bool { offset < count && bytes[offset] >= 0x30 && bytes[offset] <= 0x39 }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard isDigit(index) else { throw fail("expected a digit in a number, found \(describeByte(at: index, in: bytes))", index) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if isDigit(index) { throw fail("a number must not have a leading zero", start) }
        } else {
            while isDigit(index) { index += 1 }
        }
        if index < count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard isDigit(index) else { throw fail("expected a digit after the decimal point, found \(describeByte(at: index, in: bytes))", index) }
            while isDigit(index) { index += 1 }
        }
        if index < count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard isDigit(index) else { throw fail("expected a digit in the exponent, found \(describeByte(at: index, in: bytes))", index) }
            while isDigit(index) { index += 1 }
        }
        return index
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x66)
    }
}
