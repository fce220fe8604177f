import ArgumentParser
import DocumentFS
import DocumentModel
import Foundation

/// `docfs types`: which files are documents of which type, by the one rule the mount uses.
struct TypesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "types",
        abstract: "Show which files are documents: extension → content type → document type, validated or raw.",
        discussion: """
            A file's content type comes from its extension (the built-in table of Apple's types, the \
            app's declarations, then the freedesktop shared-mime-info database); the first document \
            type that reads a type it conforms to validates it. Anything else is raw data, stored as \
            written. With NAMEs, shows those files; without, every known extension.
            """)

    @Argument(help: "File names to look up (notes.md, settings.json, archive.tar.gz).")
    var names: [String] = []

    @Flag(help: "Only the extensions a document type validates.")
    var validated = false

    @Flag(help: "Print the table as JSON.")
    var json = false

    struct Row: Encodable {
        let name: String
        let contentType: String?
        let documentType: String?
        let validated: Bool
    }

    func run() throws {
        let registry = DocumentTypeTable(types: StandardDocumentTypes.all)
        let rows: [Row] = (names.isEmpty ? UTType.knownFilenameExtensions.map { "*." + $0 } : names).map { name in
            let file = name.hasPrefix("*.") ? "x" + name.dropFirst() : name
            let verdict = registry.verdict(forName: String(file))
            return Row(name: name, contentType: verdict.contentType, documentType: verdict.documentType, validated: verdict.documentType != nil)
        }.filter { !validated || $0.validated }
        if json { return printJSON(rows) }
        let width = min(32, rows.map(\.name.count).max() ?? 8)
        for row in rows {
            let type = row.documentType.map { "validated by \($0.split(separator: ".").last.map(String.init) ?? $0)" } ?? "raw"
            print("\(row.name.padding(toLength: width, withPad: " ", startingAt: 0))  \((row.contentType ?? "-").padding(toLength: 36, withPad: " ", startingAt: 0))  \(type)")
        }
    }
}
