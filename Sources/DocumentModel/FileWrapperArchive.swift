import Foundation

/// DocFS's format for `FileWrapper.serializedRepresentation`.
///
/// All integers little-endian. An archive is the magic `DOCFSFW1` followed by one item:
///
///     item     := kind:u8 (1 file, 2 directory, 3 symlink)
///                 preferredFilename:string? filename:string?
///                 permissions:(u8 0 | u8 1, u32) modificationDate:(u8 0 | u8 1, f64 seconds since 1970)
///                 body
///     body     := file:      length:u64 bytes
///               | directory: count:u32 (key:string item)*
///               | symlink:   destination:string
///     string   := length:u32 UTF-8 bytes;  string? := u8 0 | u8 1 string
///
/// It round-trips nested packages with symlinks, names and the two attributes that survive a copy.
enum FileWrapperArchive {
    static let magic = Data("DOCFSFW1".utf8)

    struct FormatError: Error {}

    static func encode(_ wrapper: FileWrapper) -> Data {
        var output = magic
        append(wrapper, to: &output)
        return output
    }

    static func decode(_ data: Data) throws -> FileWrapper {
        var reader = Reader(bytes: [UInt8](data))
        guard try reader.bytes(magic.count) == [UInt8](magic) else { throw FormatError() }
        let wrapper = try readItem(&reader)
        guard reader.isAtEnd else { throw FormatError() }
        return wrapper
    }

    private static func append(_ wrapper: FileWrapper, to output: inout Data) {
        let kind: UInt8 = wrapper.isRegularFile ? 1 : wrapper.isDirectory ? 2 : 3
        output.append(kind)
        appendOptional(wrapper.preferredFilename, to: &output)
        appendOptional(wrapper.filename, to: &output)
        let permissions = wrapper.fileAttributes[FileAttributeKey.posixPermissions.rawValue] as? NSNumber
        if let permissions {
            output.append(1)
            appendInteger(UInt32(permissions.uint32Value), to: &output)
        } else {
            output.append(0)
        }
        if let date = wrapper.fileAttributes[FileAttributeKey.modificationDate.rawValue] as? Date {
            output.append(1)
            appendInteger(date.timeIntervalSince1970.bitPattern, to: &output)
        } else {
            output.append(0)
        }
        switch kind {
        case 1:
            let contents = wrapper.regularFileContents ?? Data()
            appendInteger(UInt64(contents.count), to: &output)
            output.append(contents)
        case 2:
            let children = (wrapper.fileWrappers ?? [:]).sorted { $0.key < $1.key }
            appendInteger(UInt32(children.count), to: &output)
            for (key, child) in children {
                appendString(key, to: &output)
                append(child, to: &output)
            }
        default:
            appendString(wrapper.linkDestinationText ?? "", to: &output)
        }
    }

    private static func readItem(_ reader: inout Reader) throws -> FileWrapper {
        let kind = try reader.byte()
        let preferredFilename = try reader.optionalString()
        let filename = try reader.optionalString()
        var attributes: [String: Any] = [:]
        if try reader.byte() == 1 {
            attributes[FileAttributeKey.posixPermissions.rawValue] = NSNumber(value: try reader.integer(UInt32.self))
        }
        if try reader.byte() == 1 {
            attributes[FileAttributeKey.modificationDate.rawValue] = Date(timeIntervalSince1970: Double(bitPattern: try reader.integer(UInt64.self)))
        }
        let wrapper: FileWrapper
        switch kind {
        case 1:
            let length = try reader.integer(UInt64.self)
            guard length <= UInt64(reader.remaining) else { throw FormatError() }
            wrapper = FileWrapper(regularFileWithContents: Data(try reader.bytes(Int(length))))
        case 2:
            let count = try reader.integer(UInt32.self)
            var children: [String: FileWrapper] = [:]
            for _ in 0..<count {
                let key = try reader.string()
                children[key] = try readItem(&reader)
            }
            wrapper = FileWrapper(directoryWithFileWrappers: children)
        case 3:
            wrapper = FileWrapper(symbolicLinkWithDestinationURL: URL(fileURLWithPath: "/"))
            wrapper.setKind(.symbolicLink, contents: nil, children: nil, destination: try reader.string())
        default:
            throw FormatError()
        }
        wrapper.preferredFilename = preferredFilename
        wrapper.filename = filename
        wrapper.fileAttributes = attributes
        return wrapper
    }

    private static func appendInteger<T: FixedWidthInteger>(_ value: T, to output: inout Data) {
        withUnsafeBytes(of: value.littleEndian) { output.append(contentsOf: $0) }
    }

    private static func appendString(_ string: String, to output: inout Data) {
        let bytes = Data(string.utf8)
        appendInteger(UInt32(bytes.count), to: &output)
        output.append(bytes)
    }

    private static func appendOptional(_ string: String?, to output: inout Data) {
        guard let string else { output.append(0); return }
        output.append(1)
        appendString(string, to: &output)
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        var remaining: Int { bytes.count - position }
        var isAtEnd: Bool { position == bytes.count }

        mutating func bytes(_ count: Int) throws -> [UInt8] {
            guard count >= 0, count <= remaining else { throw FormatError() }
            defer { position += count }
            return Array(bytes[position..<position + count])
        }

        mutating func byte() throws -> UInt8 { try bytes(1)[0] }

        mutating func integer<T: FixedWidthInteger>(_: T.Type) throws -> T {
            let raw = try bytes(MemoryLayout<T>.size)
            return raw.reversed().reduce(T.zero) { ($0 << 8) | T($1) }
        }

        mutating func string() throws -> String {
            let length = try integer(UInt32.self)
            guard let string = String(bytes: try bytes(Int(length)), encoding: .utf8) else { throw FormatError() }
            return string
        }

        mutating func optionalString() throws -> String? {
            try byte() == 1 ? try string() : nil
        }
    }
}

extension FileWrapper {
    /// The wrapper and its descendants in DocFS's documented archive format (see `FileWrapperArchive`).
    public var serializedRepresentation: Data? { FileWrapperArchive.encode(self) }
}
