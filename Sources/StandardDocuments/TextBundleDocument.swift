import DocumentModel

extension UTType {
    /// TextBundle (textbundle.org): a package holding `info.json`, a text file and `assets/`.
    /// Linux has no Info.plist to import it from, so it is declared here.
    public static let textBundle: UTType = {
        UTType.register(UTTypeDeclaration(
            identifier: "org.textbundle.package", kind: .imported, conformsTo: ["com.apple.package"],
            filenameExtensions: ["textbundle"], description: "TextBundle document"))
        return UTType(importedAs: "org.textbundle.package", conformingTo: .package)
    }()
}

/// A TextBundle package: `info.json` (with the TextBundle `version`, 1 or 2), a text file named
/// `text.*` that is valid UTF-8 (`text.md`, `text.txt`, …), and an optional `assets/` folder.
///
/// Decoding reads `info.json` and the text, never the assets. Saving carries everything else
/// forward untouched: unchanged, it returns the very package it read; with new text, it replaces
/// only the text file, taking the other items from what it read or, for a document made in memory,
/// from `existingFile`.
public struct TextBundleDocument: FileDocument {
    public static var readableContentTypes: [UTType] { [.textBundle] }

    static let defaultInfo = Data(#"{"version": 2, "type": "net.daringfireball.markdown", "transient": false}"#.utf8)

    /// The markdown (or plain) text.
    public var text: String {
        didSet { textChanged = true }
    }
    /// The name of the text file, `text.md` unless the bundle uses another.
    public private(set) var textFileName: String
    /// The TextBundle format version from `info.json`.
    public private(set) var version: Int
    private var textChanged = false
    private let package: FileWrapper?

    public init(text: String = "", textFileName: String = "text.md") {
        self.text = text
        self.textFileName = textFileName
        self.version = 2
        self.package = nil
        self.textChanged = true
    }

    public init(configuration: ReadConfiguration) throws {
        let file = configuration.file
        guard file.isDirectory, let children = file.fileWrappers else { throw Self.corrupt("a TextBundle is a folder") }
        guard let info = children["info.json"], let infoData = info.regularFileContents else {
            throw Self.corrupt("info.json is missing")
        }
        guard let object = try? JSONSerialization.jsonObject(with: infoData) as? [String: Any] else {
            throw Self.corrupt("info.json is not a JSON object")
        }
        guard let version = (object["version"] as? NSNumber)?.intValue, (1...2).contains(version) else {
            throw Self.corrupt("info.json has no TextBundle version 1 or 2")
        }
        let textNames = children.keys.filter { $0.hasPrefix("text.") && children[$0]?.isRegularFile == true }.sorted()
        guard let textName = textNames.first(where: { $0 == "text.md" }) ?? textNames.first,
              let textData = children[textName]?.regularFileContents
        else { throw Self.corrupt("the text file (text.md) is missing") }
        guard let text = String(data: textData, encoding: .utf8) else { throw Self.corrupt("\(textName) is not valid UTF-8 text") }
        if let assets = children["assets"], !assets.isDirectory { throw Self.corrupt("assets is not a folder") }
        self.text = text
        self.textFileName = textName
        self.version = version
        self.package = file
    }

    private static func corrupt(_ reason: String) -> CocoaError {
        CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedFailureReasonErrorKey: reason])
    }

    public func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        if !textChanged, let package { return package }
        var children: [String: FileWrapper] = [:]
        for (key, child) in (package ?? configuration.existingFile)?.fileWrappers ?? [:] where key != textFileName {
            children[key] = child
        }
        if children["info.json"] == nil { children["info.json"] = FileWrapper(regularFileWithContents: Self.defaultInfo) }
        children[textFileName] = FileWrapper(regularFileWithContents: Data(text.utf8))
        return FileWrapper(directoryWithFileWrappers: children)
    }
}
