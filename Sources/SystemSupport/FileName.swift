import Glibc

/// One name in a directory, as the kernel defines it: 1 to 255 bytes, no `/`, no NUL, and neither
/// `.` nor `..`. Every name DocFS did not make itself — from the kernel, from a listing of the
/// store, from a database row, from a quarantine note — becomes a `FileName` before it is used, so
/// a name can never climb out of its directory, name two levels at once, or be stored under
/// another name.
///
/// The bytes are kept in a `String` by `FileSystemPath`'s lossless encoding (valid UTF-8 as itself,
/// any other byte escaped), so a name joins paths and dictionary keys as a string does; equality
/// and hashing are by those bytes, never by Unicode equivalence (NFC and NFD spellings of a word are
/// two files on Linux).
public struct FileName: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The name's bytes in `FileSystemPath`'s encoding.
    public let string: String

    /// Why a byte string is not a file name, with the errno Linux gives for it.
    public enum Invalid: Error, CustomStringConvertible, Sendable {
        case empty
        case tooLong(Int)
        case containsSlash
        case containsNUL
        case dotOrDotDot

        public var errno: Int32 {
            if case .tooLong = self { return ENAMETOOLONG }
            return EINVAL
        }

        public var description: String {
            switch self {
            case .empty: "an empty name"
            case .tooLong(let count): "a name of \(count) bytes (255 at most)"
            case .containsSlash: "a name containing /"
            case .containsNUL: "a name containing a NUL byte"
            case .dotOrDotDot: "the name . or .."
            }
        }
    }

    /// The longest name Linux file systems take, in bytes.
    public static let maximumLength = 255

    /// A name from its bytes.
    public init<Bytes: Collection>(bytes: Bytes) throws(Invalid) where Bytes.Element == UInt8 {
        try Self.check(bytes)
        string = FileSystemPath.string(fromBytes: bytes)
    }

    /// A name from a string in `FileSystemPath`'s encoding (what `string` holds).
    public init(_ string: String) throws(Invalid) {
        // Most names are plain: checked on their UTF-8 without decoding the escapes.
        if FileSystemPath.isPlainEncoding(string) {
            try Self.check(string.utf8)
        } else {
            try Self.check(FileSystemPath.bytes(of: string))
        }
        self.string = string
    }

    /// A name DocFS itself spells (its private area, a staging file's name): checked all the same.
    public init(validating literal: StaticString) {
        do {
            try self.init(literal.description)
        } catch {
            preconditionFailure("\(literal) is not a file name: \(error)")
        }
    }

    /// Throws why `bytes` are not a file name, if they are not (what `init(bytes:)` checks, with
    /// no name made).
    public static func check<Bytes: Collection>(_ bytes: Bytes) throws(Invalid) where Bytes.Element == UInt8 {
        let count = bytes.count
        if count == 0 { throw .empty }
        if count > maximumLength { throw .tooLong(count) }
        var dots = 0
        for byte in bytes {
            if byte == UInt8(ascii: "/") { throw .containsSlash }
            if byte == 0 { throw .containsNUL }
            if byte == UInt8(ascii: ".") { dots += 1 }
        }
        if dots == count && count <= 2 { throw .dotOrDotDot }
    }

    /// The name's bytes.
    public var bytes: [UInt8] { FileSystemPath.bytes(of: string) }

    public var description: String { string }

    public static func == (first: FileName, second: FileName) -> Bool {
        FileSystemPath.same(first.string, second.string)
    }

    public func hash(into hasher: inout Hasher) {
        var copy = string
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// By bytes, never by Unicode collation.
    public static func < (first: FileName, second: FileName) -> Bool { first.string.utf8.lexicographicallyPrecedes(second.string.utf8) }
}

/// A path inside a store: `FileName`s joined by `/`, `""` for the store's root.
public enum StorePath {
    /// `parent/name`.
    public static func join(_ parent: String, _ name: FileName) -> String {
        parent.isEmpty ? name.string : parent + "/" + name.string
    }

    /// The parent path and the last name; nil for the root, or a path with an invalid component.
    public static func split(_ path: String) -> (parent: String, name: FileName)? {
        let bytes = path.utf8
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else {
            return (try? FileName(path)).map { ("", $0) }
        }
        guard let name = try? FileName(String(path[bytes.index(after: slash)...])) else { return nil }
        return (String(path[..<slash]), name)
    }

    /// The last name of a path (the whole path when it has no `/`): sliced on its UTF-8 view, since
    /// Character-based indexing showed up in profiles of readdirplus.
    public static func lastComponent(_ path: String) -> String {
        let bytes = path.utf8
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[bytes.index(after: slash)...])
    }

    /// Whether `path` is `folder` or lies below it, by bytes (`""` is the root, above everything).
    /// `String.hasPrefix` compares characters: `d/` + a name beginning with a combining mark does
    /// not start with `d/` by characters.
    public static func isWithin(_ path: String, _ folder: String) -> Bool {
        if folder.isEmpty { return true }
        let bytes = path.utf8, prefix = folder.utf8
        guard bytes.starts(with: prefix) else { return false }
        let rest = bytes.dropFirst(prefix.count)
        return rest.isEmpty || rest.first == UInt8(ascii: "/")
    }

    /// `path` below `folder` (see `isWithin`) moved below `destination` instead.
    public static func replacingFolder(_ folder: String, with destination: String, in path: String) -> String {
        let rest = Substring(path.utf8.dropFirst(folder.utf8.count))
        if folder.isEmpty { return join(destination, rest) }
        return destination + rest
    }

    private static func join(_ parent: String, _ rest: Substring) -> String { parent.isEmpty ? String(rest) : parent + "/" + rest }

    /// The path's names as strings, root first, split on the byte `/` (never on characters); empty
    /// components are skipped.
    public static func names(_ path: String) -> [String] {
        path.utf8.split(separator: UInt8(ascii: "/")).map { String(Substring($0)) }
    }

    /// The path's names, root first; throws for a path with an empty, `.`, `..` or overlong
    /// component.
    public static func components(_ path: String) throws(FileName.Invalid) -> [FileName] {
        if path.isEmpty { return [] }
        var names: [FileName] = []
        for component in path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            names.append(try FileName(String(Substring(component))))
        }
        return names
    }
}
