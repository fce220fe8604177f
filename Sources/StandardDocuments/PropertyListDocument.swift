import DocumentModel

/// A property list (`.plist`): binary (`bplist00`), XML or OpenStep text, accepted when Foundation's
/// `PropertyListSerialization` reads it. Refusals say where: for XML, the line and column of the
/// first well-formedness error (or the structural problem Foundation names, with its line); for
/// binary, what of the 32-byte trailer and offset table does not fit the file (a truncated copy is
/// the usual cause). Saved exactly as written: DocFS never converts between the formats.
public struct PropertyListDocument: FileDocument {
    public static var readableContentTypes: [UTType] { [.propertyList] }

    public private(set) var contents: Data

    /// The parsed property list and the format it is stored in.
    public func value() throws -> (value: Any, format: PropertyListSerialization.PropertyListFormat) {
        var format = PropertyListSerialization.PropertyListFormat.xml
        let value = try PropertyListSerialization.propertyList(from: contents, options: [], format: &format)
        return (value, format)
    }

    public init(configuration: ReadConfiguration) throws {
        let data = try configuration.regularFileBytes()
        _ = try ParserCheck.propertyList.run(data)
        contents = data
    }

    public func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: contents)
    }
}

/// The end of a binary property list: six unused bytes, the sort version, the sizes of an offset and
/// of an object reference, then three big-endian 64-bit numbers — object count, top object, offset
/// table position. Checking them names the damage precisely where Foundation only says "corrupt".
enum BinaryPropertyListTrailer {
    static let headerSize = 8
    static let size = 32

    static func problem(in data: Data) -> String? {
        guard data.count >= headerSize + size else {
            return "\(data.count) bytes is shorter than the header and 32-byte trailer every binary property list has (truncated?)"
        }
        let trailer = Array(data.suffix(size))
        let offsetSize = Int(trailer[6]), referenceSize = Int(trailer[7])
        func number(at index: Int) -> UInt64 { trailer[index..<index + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        let objectCount = number(at: 8), topObject = number(at: 16), tableOffset = number(at: 24)
        let trailerStart = UInt64(data.count - size)
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
            return "the trailer (the last 32 bytes) gives offset size \(offsetSize) and reference size \(referenceSize), which must be 1 to 8 (truncated or damaged file)"
        }
        guard objectCount > 0, topObject < objectCount else {
            return "the trailer names top object \(topObject) of \(objectCount) objects (truncated or damaged file)"
        }
        let (tableBytes, overflow) = objectCount.multipliedReportingOverflow(by: UInt64(offsetSize))
        guard !overflow, tableOffset >= UInt64(headerSize), tableOffset <= trailerStart,
              tableBytes <= trailerStart - tableOffset
        else {
            return "the trailer places an offset table of \(objectCount) × \(offsetSize) bytes at byte \(tableOffset), but the trailer starts at byte \(trailerStart) (truncated or damaged file)"
        }
        return nil
    }
}

extension Data {
    /// The first byte that is not ASCII white space (or a UTF-8 byte order mark), if any.
    var firstNonSpaceByte: UInt8? {
        var rest = self[...]
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        return rest.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
    }
}
