import DocumentModel
import Foundation
import StandardDocuments
import Testing

/// The built-in JSON and text types accept exactly their formats and say where a document breaks.
struct StrictValidationTests {
    private func decodeJSON(_ text: String) throws -> JSONDocument {
        try JSONDocument(configuration: .init(contentType: .json, file: FileWrapper(regularFileWithContents: Data(text.utf8))))
    }

    private func reason(of error: any Error) -> String {
        ((error as? CocoaError)?.userInfo[NSLocalizedFailureReasonErrorKey] as? String) ?? "\(error)"
    }

    @Test(arguments: [
        "{}", "[]", "0", "-0.5e+10", "\"\"", "true", "null", " \t\r\n[1, 2.5, -3e2, \"a\\u00e9\\n\", {\"k\": [false, null]}] ",
        "\u{FEFF}{\"bom\": 1}", "{\"é\": \"ü\"}", String(repeating: "[", count: 5000) + "1" + String(repeating: "]", count: 5000),
    ])
    func validJSONIsAccepted(text: String) throws {
        _ = try decodeJSON(text)
    }

    @Test(arguments: [
        ("[1,]", "line 1, column 4: expected a value after ',' (a trailing comma is not JSON)"),
        ("{\"a\":1,}", "line 1, column 8: expected a key after ',' (a trailing comma is not JSON)"),
        ("{\"a\": 1}\n{", "line 2, column 1: unexpected '{' after the JSON value"),
        ("{\n  \"a\": 01\n}", "line 2, column 8: a number must not have a leading zero"),
        ("[\"tab\there\"]", "line 1, column 6: a control character (a tab) must be escaped in a string"),
        ("{\"a\" 1}", "line 1, column 6: expected ':' after a key"),
        ("[1 2]", "line 1, column 4: expected ',' or ']'"),
        ("{'a': 1}", "line 1, column 2: expected a string key"),
        ("[\"\\x\"]", "line 1, column 3: invalid escape \\'x'"),
        ("[1.]", "line 1, column 4: expected a digit after the decimal point"),
        ("[NaN]", "line 1, column 2: expected a value in an array"),
        ("[tru]", "line 1, column 2: expected true"),
        ("{\"a\": [1, 2", "line 1, column 12: the document ends early: 2 unclosed arrays or objects"),
        ("   ", "the document ends early: no JSON value"),
        ("\"unterminated", "line 1, column 1: a string is not closed"),
    ])
    func invalidJSONIsRefusedWithLineAndColumn(text: String, expected: String) {
        #expect {
            _ = try decodeJSON(text)
        } throws: { error in
            let message = reason(of: error)
            return message.hasPrefix("not valid JSON: ") && message.contains(expected)
        }
    }

    @Test func invalidUTF8InsideAJSONStringIsRefused() {
        let bytes = Data("[\"caf".utf8) + Data([0xC3]) + Data("\"]".utf8)
        #expect(throws: CocoaError.self) {
            _ = try JSONDocument(configuration: .init(contentType: .json, file: FileWrapper(regularFileWithContents: bytes)))
        }
    }

    @Test func invalidTextNamesTheByteAndWhereItIs() throws {
        let bytes = Data("line one\nline tw".utf8) + Data([0xFF]) + Data("o\n".utf8)
        #expect {
            _ = try PlainTextDocument(configuration: .init(contentType: .plainText, file: FileWrapper(regularFileWithContents: bytes)))
        } throws: { error in
            reason(of: error) == "not valid UTF-8 text: byte 0xFF at byte offset 16 (line 2, column 8)"
        }
    }

    @Test func aLargeMappedDocumentIsValidatedWithoutKeepingItResident() throws {
        // 96 MiB of JSON, mapped: validating it must not leave the mapping resident.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-json-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("large.json")
        let element = Data("{\"name\": \"entry\", \"values\": [1, 2.5, true, null], \"text\": \"caf\u{E9} \\u00e9\"},\n".utf8)
        var chunk = Data()
        while chunk.count < 1 << 20 { chunk += element }
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        let handle = try FileHandle(forWritingTo: url)
        try handle.write(contentsOf: Data("[".utf8))
        for _ in 0..<96 { try handle.write(contentsOf: chunk) }
        try handle.write(contentsOf: Data("0]".utf8))
        try handle.close()
        let growth = try ResidentMemory.measuring {
            let before = ResidentMemory.bytes
            let wrapper = try FileWrapper(url: url)
            _ = try JSONDocument(configuration: .init(contentType: .json, file: wrapper))
            return (ResidentMemory.bytes - before) / 1024
        }
        print("validating 96 MiB of JSON left the resident set \(growth) KiB larger")
        #expect(growth < 32 * 1024)
    }
}
