import DocumentModel

/// The error a standard document type throws for content it refuses: Apple's
/// `CocoaError(.fileReadCorruptFile)`, with a reason that names the place ("line 3, column 1: …")
/// as the failure reason, which DocFS logs and writes beside the quarantined bytes.
func refusal(_ reason: String, underlying: (any Error)? = nil) -> CocoaError {
    var userInfo: [String: Any] = [NSLocalizedFailureReasonErrorKey: reason]
    if let underlying { userInfo[NSUnderlyingErrorKey] = underlying }
    return CocoaError(.fileReadCorruptFile, userInfo: userInfo)
}

extension FileDocumentReadConfiguration {
    /// The bytes of a regular-file document; a folder where a file belongs is refused.
    func regularFileBytes() throws -> Data {
        guard let data = file.regularFileContents else { throw refusal("expected a file, found a folder") }
        return data
    }

    /// The document's bytes, refused unless they are well-formed UTF-8 (parsers that take Strings
    /// would otherwise repair bad bytes silently with U+FFFD).
    func utf8Bytes(format: String) throws -> Data {
        let data = try regularFileBytes()
        try data.withUnsafeBytes { bytes in
            if let offset = firstInvalidUTF8(bytes) {
                throw refusal("not valid \(format): \(TextPosition(of: offset, in: bytes)): \(describeByte(at: offset, in: bytes)) is not UTF-8")
            }
        }
        return data
    }
}
