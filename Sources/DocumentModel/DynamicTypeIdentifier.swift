import Foundation

/// Apple encodes the tags and conformance of an undeclared type into a `dyn.` identifier so the type
/// can be rebuilt from its identifier alone. This is DocFS's own reversible encoding of the same
/// facts: `dyn.a` followed by lower-case base32 of `c=<supertypes>;<tag class>=<tags>;…`.
enum DynamicTypeIdentifier {
    static let prefix = "dyn.a"
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    static func encode(tags: [UTTagClass: [String]], conformingTo parents: [String]) -> String {
        var fields = ["c=" + parents.joined(separator: ",")]
        for tagClass in tags.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            fields.append(tagClass.rawValue + "=" + (tags[tagClass] ?? []).joined(separator: ","))
        }
        return prefix + base32(Array(fields.joined(separator: ";").utf8))
    }

    static func decode(_ identifier: String) -> (tags: [UTTagClass: [String]], conformsTo: [String])? {
        guard identifier.hasPrefix(prefix),
              let bytes = unbase32(identifier.dropFirst(prefix.count)),
              let payload = String(bytes: bytes, encoding: .utf8)
        else { return nil }
        var tags: [UTTagClass: [String]] = [:]
        var parents: [String] = []
        for field in payload.split(separator: ";") {
            guard let equals = field.firstIndex(of: "=") else { return nil }
            let key = String(field[..<equals])
            let values = field[field.index(after: equals)...].split(separator: ",").map(String.init)
            if key == "c" { parents = values } else { tags[UTTagClass(rawValue: key)] = values }
        }
        return (tags, parents)
    }

    private static func base32(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: output, as: UTF8.self)
    }

    private static func unbase32(_ text: Substring) -> [UInt8]? {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for character in text.utf8 {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            buffer = (buffer << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                output.append(UInt8((buffer >> UInt32(bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return output
    }
}
