import Foundation
import Testing

/// Every built-in format through a real mount: a valid save is stored byte for byte, an invalid one
/// fails at close with EIO, leaves the stored document as it was, and is quarantined with a reason
/// that says where the problem is.
@Suite(.timeLimit(.minutes(10)))
struct FormatValidationTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let file: String
        let original: Data
        let valid: Data
        let invalid: Data
        /// What the quarantine's reason must say.
        let reason: [String]
        var testDescription: String { file }
    }

    static let binaryPropertyList: Data = {
        let value: [String: Any] = ["name": "DocFS", "sizes": [1, 2, 3], "nested": ["enabled": true]]
        return (try? PropertyListSerialization.data(fromPropertyList: value, format: .binary, options: 0)) ?? Data()
    }()

    static let cases: [Case] = [
        Case(file: "config.yaml", original: Data("name: old\n".utf8),
             valid: Data("# two documents\nname: new\nitems:\n  - a\n  - b\n---\nsecond: true\n".utf8),
             invalid: Data("name: new\nitems:\n\t- a\n".utf8),
             reason: ["not valid YAML", "line 3, column 1", "tab"]),
        Case(file: "settings.toml", original: Data("title = \"old\"\n".utf8),
             valid: Data("title = \"new\"\n\n[server]\nport = 8080\nhosts = [\"a\", \"b\"]\n".utf8),
             invalid: Data("title = \"new\"\n[server]\nport = 8080\nport = 8081\n".utf8),
             reason: ["not valid TOML", "line 4, column", "port"]),
        Case(file: "feed.xml", original: Data("<feed/>\n".utf8),
             valid: Data("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed lang=\"en\">\n  <entry id=\"1\">caf\u{E9}</entry>\n</feed>\n".utf8),
             invalid: Data("<?xml version=\"1.0\"?>\n<feed>\n  <entry>\n</feed>\n".utf8),
             reason: ["not well-formed XML", "line 4", "closing tag does not match"]),
        Case(file: "drawing.svg", original: Data("<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n".utf8),
             valid: Data("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\"><rect width=\"5\" height=\"5\"/></svg>\n".utf8),
             invalid: Data("<svg xmlns=\"http://www.w3.org/2000/svg\">\n<rect width=5/></svg>\n".utf8),
             reason: ["not well-formed XML", "line 2"]),
        Case(file: "prefs.plist", original: Data("<?xml version=\"1.0\"?>\n<plist version=\"1.0\"><dict/></plist>\n".utf8),
             valid: binaryPropertyList,
             invalid: binaryPropertyList.prefix(binaryPropertyList.count - 9),
             reason: ["not a valid binary property list", "trailer", "truncated"]),
        Case(file: "table.csv", original: Data("name,qty\n".utf8),
             valid: Data("name,qty\r\n\"a, b\",1\r\n\"say \"\"hi\"\"\",2\r\n\"two\nlines\",3\r\n".utf8),
             invalid: Data("name,qty\napples,1\n\"pears,2\n".utf8),
             reason: ["not valid comma-separated values", "line 3, column 1", "unbalanced quote"]),
        Case(file: "table.tsv", original: Data("name\tqty\n".utf8),
             valid: Data("name\tqty\n\"quoted\"\t1\n".utf8),
             invalid: Data("name\tqty\napples\t1\textra\n".utf8),
             reason: ["not valid tab-separated values", "line 2", "3 tab-separated fields, the first record has 2"]),
        Case(file: "page.html", original: Data("<p>old</p>\n".utf8),
             valid: Data("<p>caf\u{E9}</p>\n".utf8),
             invalid: Data([0x3C, 0x70, 0x3E, 0x0A, 0x63, 0x61, 0x66, 0xE9, 0x3C, 0x2F, 0x70, 0x3E]),
             reason: ["not valid UTF-8 text", "line 2, column 4"]),
    ]

    @Test(arguments: cases)
    func validSavesAreStoredExactlyAndInvalidOnesRefusedWithTheirPlace(_ format: Case) throws {
        let mount = try MountedStore(files: [format.file: format.original])
        defer { mount.unmount() }

        #expect(try mount.save(format.file, format.invalid) == "EIO", "an invalid save fails at close")
        #expect(mount.storeData(format.file) == format.original, "the stored document is as it was")
        let kept = try #require(mount.quarantined.first { $0.hasSuffix(format.file) }, "the refused bytes are quarantined")
        #expect(try Data(contentsOf: URL(fileURLWithPath: mount.inStore(".docfs/quarantine/" + kept))) == format.invalid)
        let reason = try #require(mount.quarantineReasons.first { $0.contains("document: \(format.file)") })
        for fragment in format.reason {
            #expect(reason.contains(fragment), "the reason says \(fragment): \(reason)")
        }

        #expect(try mount.save(format.file, format.valid) == "ok", "a valid save succeeds")
        #expect(mount.storeData(format.file) == format.valid, "and is stored byte for byte, not reformatted")
        let readBack = try mount.run(["cat", format.file])
        #expect(readBack.succeeded && Data(readBack.output.utf8) == format.valid || format.file.hasSuffix(".plist"))
    }

    @Test func aBinaryPropertyListReadsBackWhole() throws {
        let mount = try MountedStore(files: ["prefs.plist": Self.binaryPropertyList])
        defer { mount.unmount() }
        let result = try mount.python("import plistlib; print(plistlib.load(open('prefs.plist', 'rb'))['name'])")
        #expect(result.output == "DocFS\n", "\(result.error)")
    }
}
