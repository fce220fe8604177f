import DocumentModel
import FoundationXML

/// An XML document — `.xml`, SVG, XHTML and every other type conforming to `public.xml` or carrying
/// an `+xml` MIME type — accepted when it is well-formed XML 1.0 (Foundation's `XMLParser`, which is
/// libxml2): one root element, matching tags, quoted attributes, no duplicate attribute, known
/// entities. External entities are never fetched. Refused naming the line and column of the first
/// problem. Saved exactly as written. (Named so it does not shadow FoundationXML's `XMLDocument`.)
public struct XMLTextDocument: FileDocument {
    public static var readableContentTypes: [UTType] { [.xml, .svg] }

    public private(set) var contents: Data

    public init(configuration: ReadConfiguration) throws {
        let data = try configuration.regularFileBytes()
        _ = try ParserCheck.xml.run(data)
        contents = data
    }

    public func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: contents)
    }
}

/// The first well-formedness error `XMLParser` reports, with its place. The parser's own result
/// cannot be trusted for this on Linux (`parse()` answers true after a tag mismatch), so the
/// delegate records the first error as it is reported.
enum XMLWellFormedness {
    static func firstProblem(in data: Data) -> String? {
        let parser = XMLParser(data: data)
        let recorder = FirstErrorRecorder()
        parser.delegate = recorder
        parser.shouldResolveExternalEntities = false
        let finished = parser.parse()
        if let problem = recorder.problem { return problem }
        if !finished, let error = parser.parserError {
            return "line \(parser.lineNumber), column \(parser.columnNumber): \(message(for: error))"
        }
        if !recorder.sawRootElement { return "the document has no root element" }
        return nil
    }

    private final class FirstErrorRecorder: NSObject, XMLParserDelegate {
        var problem: String?
        var sawRootElement = false

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName: String?, attributes: [String: String]
        ) {
            sawRootElement = true
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
            guard problem == nil else { return }
            problem = "line \(parser.lineNumber), column \(parser.columnNumber): \(XMLWellFormedness.message(for: parseError))"
            parser.abortParsing()
        }
    }

    /// libxml2's error numbers (`xmlParserErrors`, which Foundation on Linux passes on as the
    /// error's code, with no message) in words, for the common well-formedness errors.
    static func message(for error: any Error) -> String {
        let code = (error as NSError).code
        return libxml2Messages[code] ?? "XML error \(code) (libxml2's xmlParserErrors)"
    }

    private static let libxml2Messages: [Int: String] = [
        3: "the document does not start like XML",
        4: "the document is empty",
        5: "content after the root element (an XML document has exactly one)",
        6: "an invalid hexadecimal character reference", 7: "an invalid decimal character reference",
        8: "an invalid character reference", 9: "a character XML does not allow",
        10: "a character reference at the end of the document", 14: "an entity reference at the end of the document",
        22: "an '&' that does not start an entity reference (write &amp;)",
        23: "an entity reference without its ';'",
        26: "an undeclared entity", 28: "an unparsed entity", 29: "an external entity", 30: "a parameter entity",
        31: "an unknown encoding", 32: "an unsupported encoding",
        33: "a string that does not start with a quote", 34: "an unterminated string",
        35: "a broken namespace declaration",
        37: "an unterminated entity", 38: "a '<' inside an attribute value",
        39: "an attribute value without quotes", 40: "an unterminated attribute value", 41: "an attribute without a value",
        42: "an attribute given twice on one element",
        43: "a literal that does not start with a quote", 44: "an unterminated literal",
        45: "an unterminated comment", 46: "a broken processing instruction", 47: "an unterminated processing instruction",
        56: "a broken XML declaration", 57: "an unterminated XML declaration",
        61: "an unterminated DOCTYPE", 62: "']]>' outside a CDATA section", 63: "an unterminated CDATA section",
        64: "the XML declaration is not at the very start of the document",
        65: "a space is required here", 68: "a name is required here (an element or attribute name)",
        72: "a '<' is required here", 73: "a '>' is required here", 74: "a '</' is required here", 75: "an '=' is required here",
        76: "a closing tag does not match the open element",
        77: "an element is not closed before the document ends",
        80: "'--' inside a comment", 85: "the elements are not balanced", 86: "extra content where the element ends",
        201: "a namespace prefix that is not declared", 203: "a namespace given twice on one element",
    ]
}
