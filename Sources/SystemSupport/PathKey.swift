/// A store path (or one name) as a key, a set member or an identity: equal, hashed and ordered by
/// the bytes it stands for. A Swift `String` is equal to another by Unicode canonical equivalence,
/// under which the NFC and NFD spellings of "café" — two files on Linux — are one key, and its
/// `hasPrefix`, `split` and `count` work on characters, where a name beginning with a combining
/// mark joins the `/` before it. Every table of paths in DocFS is keyed by this instead.
public struct PathKey: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The path in `FileSystemPath`'s encoding.
    public let path: String

    public init(_ path: String) { self.path = path }

    public var description: String { path }

    public static func == (first: PathKey, second: PathKey) -> Bool { FileSystemPath.same(first.path, second.path) }

    public func hash(into hasher: inout Hasher) {
        var copy = path
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// By the encoding's UTF-8, which orders the bytes of plain names as `strcmp` does.
    public static func < (first: PathKey, second: PathKey) -> Bool { first.path.utf8.lexicographicallyPrecedes(second.path.utf8) }

    public init(from decoder: any Decoder) throws { path = try decoder.singleValueContainer().decode(String.self) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(path)
    }
}
