import CCrypto

/// The SHA-256 of some bytes in lower-case hex: one short name for bytes of any length or value
/// (a document's path in the version archive, a PostgreSQL mirror's owner).
public enum SHA256Hex {
    public static func of(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        _ = bytes.withUnsafeBytes { docfs_sha256($0.baseAddress, $0.count, &digest) }
        // On every save: hex digits by table (String(format:) per byte cost more than the hash).
        let digits = Array("0123456789abcdef".utf8)
        var hex = [UInt8](repeating: 0, count: 64)
        for (index, byte) in digest.enumerated() {
            hex[2 * index] = digits[Int(byte >> 4)]
            hex[2 * index + 1] = digits[Int(byte & 0x0f)]
        }
        return String(decoding: hex, as: UTF8.self)
    }
}
