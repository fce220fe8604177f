import Glibc

/// File names are bytes; Swift strings are Unicode. DocFS carries names and paths as strings that
/// hold those bytes losslessly: valid UTF-8 stands for itself, and every other byte `b` becomes the
/// private-use character U+F700 + b (a name's own characters in U+F700…U+F7FF are escaped the same
/// way, byte by byte). So two different byte strings are two different strings, every string
/// converts back to exactly its bytes, and valid UTF-8 names — nearly all — cost nothing extra.
///
/// Compare such strings with `==` on their `utf8` views (`FileSystemPath.same`): `String ==` is
/// Unicode canonical equivalence, under which the NFC and NFD spellings of "café" — two files on
/// Linux — are equal.
public enum FileSystemPath {
    static let escapeBase: UInt32 = 0xF700

    /// The string for a name or path read from the kernel (a NUL-terminated C string).
    public static func string(fromCString pointer: UnsafePointer<CChar>) -> String {
        string(fromBytes: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)))
    }

    public static func string(fromBytes bytes: UnsafeRawBufferPointer) -> String {
        if isPlain(bytes) { return String(decoding: bytes, as: UTF8.self) }
        var scalars = String.UnicodeScalarView()
        var index = 0
        while index < bytes.count {
            let lead = bytes[index]
            if lead < 0x80 {
                scalars.append(Unicode.Scalar(lead))
                index += 1
                continue
            }
            if let (scalar, length) = decodeScalar(bytes, at: index), !(escapeBase...escapeBase + 0xFF).contains(scalar.value) {
                scalars.append(scalar)
                index += length
                continue
            }
            scalars.append(Unicode.Scalar(escapeBase + UInt32(lead)) ?? "?")
            index += 1
        }
        return String(scalars)
    }

    public static func string<Bytes: Collection>(fromBytes bytes: Bytes) -> String where Bytes.Element == UInt8 {
        Array(bytes).withUnsafeBytes { string(fromBytes: $0) }
    }

    /// The bytes a string made by `string(fromBytes:)` stands for.
    public static func bytes(of string: String) -> [UInt8] {
        guard needsUnescaping(string) else { return Array(string.utf8) }
        var result: [UInt8] = []
        result.reserveCapacity(string.utf8.count)
        for scalar in string.unicodeScalars {
            if (escapeBase...escapeBase + 0xFF).contains(scalar.value) {
                result.append(UInt8(scalar.value - escapeBase))
            } else {
                result.append(contentsOf: String(scalar).utf8)
            }
        }
        return result
    }

    /// How many bytes `string` stands for (a name's length as the kernel counts it).
    public static func byteCount(of string: String) -> Int {
        needsUnescaping(string) ? bytes(of: string).count : string.utf8.count
    }

    /// Calls `body` with the NUL-terminated bytes `string` stands for.
    @discardableResult
    public static func withCString<T>(_ string: String, _ body: (UnsafePointer<CChar>) throws -> T) rethrows -> T {
        guard needsUnescaping(string) else { return try string.withCString(body) }
        var bytes = bytes(of: string)
        bytes.append(0)
        return try bytes.withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { characters in
                guard let base = characters.baseAddress else { return try "".withCString(body) }
                return try body(base)
            }
        }
    }

    /// Each string's bytes in a C string of its own, then nil: an argv or envp for `posix_spawn`
    /// or `execve`. The caller frees each.
    public static func cStringArray(_ strings: [String]) -> [UnsafeMutablePointer<CChar>?] {
        strings.map { withCString($0) { strdup($0) } } + [nil]
    }

    /// `realpath(3)` of the bytes `path` stands for, in this encoding; nil where it fails.
    public static func resolved(_ path: String) -> String? {
        guard let pointer = withCString(path, { realpath($0, nil) }) else { return nil }
        defer { free(pointer) }
        return string(fromCString: pointer)
    }

    /// The process's working directory, in this encoding: Foundation's `currentDirectoryPath`
    /// decodes it as UTF-8, so a folder whose name is not became a look-alike path. Nil where it
    /// cannot be read (removed since, or not reachable).
    public static func currentDirectory() -> String? {
        var size = 4096
        while true {
            var buffer = [CChar](repeating: 0, count: size)
            if getcwd(&buffer, size) != nil { return buffer.withUnsafeBufferPointer { $0.baseAddress.map(string(fromCString:)) } }
            guard errno == ERANGE else { return nil }
            size *= 2
        }
    }

    /// `path` as given when absolute, else below the working directory (nil where that cannot be read).
    public static func absolute(_ path: String) -> String? {
        if path.utf8.first == UInt8(ascii: "/") { return path }
        return currentDirectory().map { $0 == "/" ? "/" + path : $0 + "/" + path }
    }

    /// Whether two names or paths are the same bytes (not merely canonically equivalent).
    public static func same(_ first: String, _ second: String) -> Bool {
        first.utf8.elementsEqual(second.utf8)
    }

    /// O_PATH, which Glibc's Swift module does not export (x86_64 and arm64 value).
    static let openPathOnly: Int32 = 0o10000000

    /// Longest path handed to a system call in one piece; longer ones are walked (see `at`).
    static let longestPath = 3800

    /// Calls `body` with a directory descriptor and a path relative to it that together name
    /// `path`, so a path of any length works: up to `longestPath` bytes it is `AT_FDCWD` and the
    /// path itself; beyond, the leading components are opened a piece at a time (each piece well
    /// under PATH_MAX) and the rest is relative to the last directory opened. Only each component
    /// is limited, to 255 bytes, as on the file system itself.
    ///
    /// A path below an open `ConfinedTree` is resolved from the tree's descriptor instead, with no
    /// symbolic link followed on the way: `body` gets the directory holding the last name, and that
    /// name.
    @discardableResult
    public static func at<T>(_ path: String, _ body: (Int32, UnsafePointer<CChar>) throws -> T) throws -> T {
        if let (tree, relative) = ConfinedTrees.containing(path) { return try tree.resolve(relative, fullPath: path, body) }
        // The common case, on every hot path: a plain path of ordinary length, used as it is.
        if path.utf8.count <= longestPath && !needsUnescaping(path) {
            return try path.withCString { try body(AT_FDCWD, $0) }
        }
        let bytes = bytes(of: path)
        if bytes.count <= longestPath {
            return try withCString(path) { try body(AT_FDCWD, $0) }
        }
        var directory = AT_FDCWD
        defer { if directory != AT_FDCWD { close(directory) } }
        var start = 0
        if bytes.first == UInt8(ascii: "/") {
            directory = try open(AT_FDCWD, bytesOf: [UInt8(ascii: "/")], path: path)
            start = 1
        }
        while bytes.count - start > longestPath {
            // The longest run of whole components that fits.
            var end = start + longestPath
            while end > start, bytes[end] != UInt8(ascii: "/") { end -= 1 }
            guard end > start else { throw SystemCallError(errno: ENAMETOOLONG, operation: "open", path: path) }
            let next = try open(directory, bytesOf: Array(bytes[start..<end]), path: path)
            if directory != AT_FDCWD { close(directory) }
            directory = next
            start = end + 1
        }
        let rest = string(fromBytes: bytes[start...])
        return try withCString(rest) { try body(directory, $0) }
    }

    private static func open(_ directory: Int32, bytesOf relative: [UInt8], path: String) throws -> Int32 {
        try withCString(string(fromBytes: relative)) { characters in
            try retryingOnInterrupt("open", path: path) { openat(directory, characters, openPathOnly | O_DIRECTORY | O_CLOEXEC) }
        }
    }

    /// Valid UTF-8 with no character in the escape range: the common case, taken as it is.
    private static func isPlain(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x80 {
                index += 1
                continue
            }
            guard let (scalar, length) = decodeScalar(bytes, at: index), !(escapeBase...escapeBase + 0xFF).contains(scalar.value) else { return false }
            index += length
        }
        return true
    }

    /// Whether the string's UTF-8 is exactly the bytes it stands for (it holds no escaped byte).
    public static func isPlainEncoding(_ string: String) -> Bool { !needsUnescaping(string) }

    /// Whether the string holds any escaped byte (so its UTF-8 is not its bytes).
    private static func needsUnescaping(_ string: String) -> Bool {
        // U+F700…U+F7FF encode as EF 9C 80 … EF 9F BF. Asked of every path on every request:
        // memchr finds the rare lead byte where a loop over the string's bytes looked at each.
        if let found = string.utf8.withContiguousStorageIfAvailable({ holdsEscape(UnsafeRawBufferPointer($0)) }) { return found }
        var previous: UInt8 = 0
        for byte in string.utf8 {
            if previous == 0xEF && (0x9C...0x9F).contains(byte) { return true }
            previous = byte
        }
        return false
    }

    private static func holdsEscape(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, bytes.count > 1 else { return false }
        var offset = 0
        // The lead byte is looked for where a byte can follow it.
        while offset < bytes.count - 1, let hit = memchr(base + offset, 0xEF, bytes.count - 1 - offset) {
            let at = base.distance(to: UnsafeRawPointer(hit))
            if (0x9C...0x9F).contains(bytes[at + 1]) { return true }
            offset = at + 1
        }
        return false
    }

    /// The well-formed UTF-8 sequence at `index`, if there is one.
    private static func decodeScalar(_ bytes: UnsafeRawBufferPointer, at index: Int) -> (Unicode.Scalar, Int)? {
        guard let (value, length) = UTF8Sequence.decode(bytes, at: index), let scalar = Unicode.Scalar(value) else { return nil }
        return (scalar, length)
    }
}
