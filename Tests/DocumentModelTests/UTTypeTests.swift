import DocumentModel
import Foundation
import Testing

@Suite struct UTTypeTests {
    @Test func systemIdentifiersAreApples() {
        #expect(UTType.plainText.identifier == "public.plain-text")
        #expect(UTType.utf8PlainText.identifier == "public.utf8-plain-text")
        #expect(UTType.json.identifier == "public.json")
        #expect(UTType.package.identifier == "com.apple.package")
        #expect(UTType.pdf.identifier == "com.adobe.pdf")
        #expect(UTType.zip.identifier == "public.zip-archive")
        #expect(UTType.symbolicLink.identifier == "public.symlink")
        #expect(UTType.swiftSource.identifier == "public.swift-source")
        #expect(UTType.markdown.identifier == "net.daringfireball.markdown")
        #expect(UTType("public.png") == .png)
        #expect(UTType("com.example.never-declared") == nil)
        #expect(UTType.plainText.isDeclared && !UTType.plainText.isDynamic && UTType.plainText.isPublic)
        #expect(!UTType.package.isPublic)
        #expect(UTType.plainText.description == "public.plain-text")
        #expect(UTType.plainText.localizedDescription == "plain text document")
    }

    @Test(arguments: [
        (UTType.pythonScript, UTType.shellScript), (.pythonScript, .script), (.pythonScript, .sourceCode),
        (.pythonScript, .plainText), (.pythonScript, .text), (.pythonScript, .data), (.pythonScript, .item),
        (.swiftSource, .sourceCode), (.utf8PlainText, .plainText), (.commaSeparatedText, .delimitedText),
        (.json, .text), (.html, .text), (.xmlPropertyList, .xml), (.xmlPropertyList, .propertyList),
        (.png, .image), (.image, .content), (.mp3, .audio), (.audio, .audiovisualContent), (.gzip, .archive),
        (.rtfd, .package), (.package, .directory), (.folder, .directory), (.directory, .item),
        (.pdf, .compositeContent), (.markdown, .plainText), (.symbolicLink, .item), (.epub, .zip),
    ])
    func conformanceChains(type: UTType, supertype: UTType) {
        #expect(type.conforms(to: supertype))
        #expect(type.isSubtype(of: supertype) && supertype.isSupertype(of: type))
        #expect(type.supertypes.contains(supertype))
        #expect(!supertype.conforms(to: type))
    }

    @Test func conformanceIsReflexiveButNotStrict() {
        #expect(UTType.json.conforms(to: .json))
        #expect(!UTType.json.isSubtype(of: .json) && !UTType.json.isSupertype(of: .json))
        #expect(!UTType.json.conforms(to: .plainText), "JSON is text, not plain text, as on Apple platforms")
        #expect(!UTType.png.conforms(to: .text))
    }

    @Test func lookupsByExtensionAndMIMEInBothDirections() {
        #expect(UTType(filenameExtension: "txt") == .plainText)
        #expect(UTType(filenameExtension: "TXT") == .plainText)
        #expect(UTType(filenameExtension: "md") == .markdown)
        #expect(UTType(filenameExtension: "json") == .json)
        #expect(UTType(filenameExtension: "jpg") == .jpeg)
        #expect(UTType(filenameExtension: "swift") == .swiftSource)
        #expect(UTType(mimeType: "application/json") == .json)
        #expect(UTType(mimeType: "image/png") == .png)
        #expect(UTType(mimeType: "TEXT/HTML") == .html)
        #expect(UTType.jpeg.preferredFilenameExtension == "jpeg")
        #expect(UTType.json.preferredMIMEType == "application/json")
        #expect(UTType.markdown.tags[.filenameExtension]?.contains("markdown") == true)
        #expect(UTType(tag: "png", tagClass: .filenameExtension, conformingTo: .image) == .png)
        #expect(UTType.types(tag: "rtfd", tagClass: .filenameExtension, conformingTo: nil) == [.rtfd, .flatRTFD])
        #expect(UTType.types(tag: "rtfd", tagClass: .filenameExtension, conformingTo: .package) == [.rtfd])
    }

    @Test func unknownTagsGiveDynamicTypes() throws {
        let unknown = try #require(UTType(filenameExtension: "zzdocfsunknown"))
        #expect(unknown.isDynamic && !unknown.isDeclared && unknown.identifier.hasPrefix("dyn."))
        #expect(unknown.conforms(to: .data) && !unknown.conforms(to: .text))
        #expect(unknown.preferredFilenameExtension == "zzdocfsunknown")
        #expect(UTType(unknown.identifier) == unknown, "a dynamic identifier resolves back to its type")
        #expect(UTType(unknown.identifier)?.preferredFilenameExtension == "zzdocfsunknown")

        let unknownText = try #require(UTType(filenameExtension: "zzdocfstext", conformingTo: .text))
        #expect(unknownText.isDynamic && unknownText.conforms(to: .text))
        let known = try #require(UTType(filenameExtension: "png", conformingTo: .text))
        #expect(known.isDynamic && known != .png, "a known tag that does not conform gives a dynamic type")
    }

    @Test func sharedMimeInfoFillsTheGapsOfTheBuiltInTable() throws {
        try #require(FileManager.default.fileExists(atPath: "/usr/share/mime/globs2"), "shared-mime-info is installed by scripts/test")
        // .odt is in shared-mime-info, not in the built-in table.
        let odt = try #require(UTType(filenameExtension: "odt"))
        #expect(odt.isDynamic && odt.preferredMIMEType == "application/vnd.oasis.opendocument.text")
        #expect(UTType(mimeType: "application/vnd.oasis.opendocument.text")?.preferredFilenameExtension == "odt")
        // text/x-rust is a text/* type, so a text/plain per the spec: plain text.
        let rust = try #require(UTType(filenameExtension: "rs"))
        #expect(rust.conforms(to: .plainText) && rust.preferredMIMEType == "text/rust")
        // A MIME type only the database knows, mapped to a declared type through its extension's MIME.
        #expect(UTType(filenameExtension: "patch")?.conforms(to: .plainText) == true)
    }

    @Test func declaredTypesFromTheApp() throws {
        UTType.register(UTTypeDeclaration(
            identifier: "com.example.mynote", kind: .exported, conformsTo: ["public.plain-text"],
            filenameExtensions: ["mynote"], mimeTypes: ["application/x-mynote"], description: "My Note"))
        let exported = UTType(exportedAs: "com.example.mynote")
        #expect(UTType(filenameExtension: "mynote") == exported)
        #expect(UTType(mimeType: "application/x-mynote") == exported)
        #expect(exported.conforms(to: .plainText) && exported.isDeclared && !exported.isDynamic)
        #expect(exported.localizedDescription == "My Note" && exported.preferredFilenameExtension == "mynote")
        #expect(UTType("com.example.mynote") == exported)

        let undeclared = UTType(importedAs: "com.example.undeclared-package", conformingTo: .package)
        #expect(undeclared.conforms(to: .package) && undeclared.conforms(to: .directory) && !undeclared.isDeclared)
        #expect(UTType(exportedAs: "com.example.other").conforms(to: .data))
    }

    @Test func codableAndHashable() throws {
        let encoded = try JSONEncoder().encode([UTType.json, .png])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["public.json","public.png"]"#)
        #expect(try JSONDecoder().decode([UTType].self, from: encoded) == [.json, .png])
        #expect(Set([UTType.json, UTType("public.json")!]).count == 1)
    }
}
