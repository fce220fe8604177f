import DocumentModel
import Foundation
import StandardDocuments
import Testing

/// The built-in formats beyond JSON and text: what each accepts, and where it says a document breaks.
struct FormatDocumentTests {
    private func reason(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return ((error as? CocoaError)?.userInfo[NSLocalizedFailureReasonErrorKey] as? String) ?? "\(error)"
        }
    }

    private func configuration(_ bytes: Data, _ type: UTType) -> FileDocumentReadConfiguration {
        .init(contentType: type, file: FileWrapper(regularFileWithContents: bytes))
    }

    private func csv(_ text: String, _ type: UTType = .commaSeparatedText) -> String? {
        reason { _ = try DelimitedTextDocument(configuration: configuration(Data(text.utf8), type)) }
    }

    @Test(arguments: [
        "", "a", "a,b\n1,2\n", "a,b\r\n1,2", "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n", "a,b\n\"multi\nline\",2\n",
        "a,b\n,\n", "\"\",\"\"\n", "a\n\n", "only\n\"quoted\"\n", "a,b,c\n1,2,\n",
    ])
    func validCSVIsAccepted(text: String) {
        #expect(csv(text) == nil)
    }

    @Test(arguments: [
        ("a,b\n1,2,3\n", "line 2, column 6: the record on line 2 has 3 comma-separated fields, the first record has 2"),
        ("a,b\n1\n", "line 2, column 2: the record on line 2 has 1 comma-separated fields, the first record has 2"),
        ("a,b\n\"open,2\n", "line 2, column 1: unbalanced quote: this quoted field is never closed"),
        ("a,b\nx\"y,2\n", "line 2, column 2: a quote inside an unquoted field"),
        ("a,b\n\"x\"y,2\n", "line 2, column 4: text after a closing quote"),
        ("a,b\n\"two\nlines\",2,3\n", "the record on line 2 has 3 comma-separated fields"),
        ("a,b\n1,2\n\n", "line 3, column 1: the record on line 3 has 1 comma-separated fields, the first record has 2"),
    ])
    func invalidCSVIsRefusedWithItsPlace(text: String, expected: String) {
        let problem = csv(text) ?? "accepted"
        #expect(problem.contains(expected), "\(problem)")
    }

    @Test func delimitedTextMustBeUTF8() {
        let bytes = Data([0x61, 0x2C, 0xFF, 0x0A])
        let problem = reason { _ = try DelimitedTextDocument(configuration: configuration(bytes, .commaSeparatedText)) }
        #expect(problem == "not valid comma-separated values: line 1, column 3: byte 0xFF is not UTF-8")
    }

    @Test func tabSeparatedValuesHaveNoQuoting() {
        #expect(csv("a\tb\n\"x\t\"y\"\n", .tabSeparatedText) == nil, "quotes are ordinary characters in TSV")
        #expect(csv("a\tb\nx\n", .tabSeparatedText)?.contains("line 2, column 2: the record on line 2 has 1 tab-separated fields") == true)
    }

    @Test func yamlStreamsAreValidatedWhole() throws {
        let stream = Data("a: 1\n---\nb: [1, 2]\n---\n- x\n".utf8)
        #expect(try YAMLDocument(configuration: configuration(stream, .yaml)).documentCount == 3)
        let second = reason { _ = try YAMLDocument(configuration: configuration(Data("a: 1\n---\nb: [1, 2\n".utf8), .yaml)) }
        #expect(second?.contains("not valid YAML: line 4") == true, "an error in a later document is found: \(second ?? "")")
        let alias = reason { _ = try YAMLDocument(configuration: configuration(Data("a: *missing\n".utf8), .yaml)) }
        #expect(alias?.contains("line 1") == true, "\(alias ?? "accepted")")
        let duplicate = reason { _ = try YAMLDocument(configuration: configuration(Data("a: 1\nb:\n  c: 1\n  c: 2\n".utf8), .yaml)) }
        #expect(duplicate == "not valid YAML: line 4, column 3: the key c appears twice in one mapping", "\(duplicate ?? "accepted")")
        let nodes = try YAMLDocument(configuration: configuration(Data("a: &x 1\nb: *x\nc: {a: 1, b: [1, 2]}\n".utf8), .yaml)).nodes()
        #expect(nodes.count == 1 && nodes[0]["b"]?.int == 1, "an alias to an earlier anchor is fine")
        let badByte = reason { _ = try YAMLDocument(configuration: configuration(Data([0x61, 0x3A, 0x20, 0xC3]), .yaml)) }
        #expect(badByte?.contains("not valid YAML: line 1, column 4") == true, "\(badByte ?? "")")
    }

    @Test func tomlRefusesWithTheLineAndColumn() throws {
        _ = try TOMLDocument(configuration: configuration(Data("[a]\nb = 2024-01-01T00:00:00Z\n".utf8), .toml))
        let problem = reason { _ = try TOMLDocument(configuration: configuration(Data("[a]\n[a]\n".utf8), .toml))}
        #expect(problem?.hasPrefix("not valid TOML: line 2") == true, "\(problem ?? "")")
    }

    @Test func xmlWellFormedness() throws {
        _ = try XMLTextDocument(configuration: configuration(Data("<a x=\"1\"><b/>text &amp; more</a>".utf8), .xml))
        let cases: [(String, String)] = [
            ("", "the document has no root element"),
            ("<a/><b/>", "line 1"),
            ("<a x=\"1\" x=\"2\"/>", "an attribute given twice"),
            ("<a>&nope;</a>", "an undeclared entity"),
            ("<a>\n<b>\n</a>", "line 3"),
        ]
        for (text, expected) in cases {
            let problem = reason { _ = try XMLTextDocument(configuration: configuration(Data(text.utf8), .xml)) }
            #expect(problem?.contains(expected) == true, "\(text): \(problem ?? "accepted")")
        }
    }

    @Test func propertyListsInEveryFormatAndDamagedOnes() throws {
        let value: [String: Any] = ["a": 1, "b": ["x", "y"]]
        for format in [PropertyListSerialization.PropertyListFormat.binary, .xml] {
            let data = try PropertyListSerialization.data(fromPropertyList: value, format: format, options: 0)
            let document = try PropertyListDocument(configuration: configuration(data, .propertyList))
            #expect(try document.value().format == format)
        }
        let binary = try PropertyListSerialization.data(fromPropertyList: value, format: .binary, options: 0)
        for cut in [1, 8, 33, binary.count - 8] {
            let problem = reason { _ = try PropertyListDocument(configuration: configuration(binary.prefix(binary.count - cut), .propertyList)) }
            #expect(problem?.hasPrefix("not a valid binary property list") == true, "cut \(cut): \(problem ?? "accepted")")
        }
        let xml = Data("<?xml version=\"1.0\"?>\n<plist version=\"1.0\">\n<dict><key>a</key></dict>\n</plist>\n".utf8)
        let structural = reason { _ = try PropertyListDocument(configuration: configuration(xml, .propertyList)) }
        #expect(structural?.hasPrefix("not a valid property list") == true, "\(structural ?? "accepted")")
    }

    @Test func everyTextTypeIsUTF8AndUTF16TextIsUTF16() throws {
        for type in [UTType.html, .rtf, .commaSeparatedText, .yaml, .vCard] {
            #expect(type.conforms(to: .text))
        }
        let bad = Data([0x3C, 0x70, 0x3E, 0xFF])
        let html = reason { _ = try PlainTextDocument(configuration: configuration(bad, .html)) }
        #expect(html?.contains("line 1, column 4") == true, "\(html ?? "accepted")")
        let utf16 = Data([0xFF, 0xFE, 0x68, 0x00, 0x69, 0x00])
        #expect(try PlainTextDocument(configuration: configuration(utf16, .utf16ExternalPlainText)).text == "hi")
        let unpaired = Data([0x00, 0x41, 0xD8, 0x00])
        #expect(reason { _ = try PlainTextDocument(configuration: configuration(unpaired, .utf16PlainText)) }?.contains("surrogate") == true)
    }
}
