import ArgumentParser
import DocumentFS
import DocumentModel
import Foundation
import TypeConfiguration

/// `docfs types`: which files are documents of which type, by the one rule the mount uses.
struct TypesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "types",
        abstract: "Show which files are documents: name pattern or extension → content type → document type, validated or raw.",
        discussion: """
            The rule, in order: a pattern of the configuration file that matches the name (the longest \
            one when several do) decides; else an extension the configuration gives to a command type; \
            else the extension's content type (the built-in table of Apple's types, the app's \
            declarations, then the freedesktop shared-mime-info database) is claimed by the first \
            document type, in the order listed, that reads a type it conforms to. Anything else is raw \
            data, stored as written. With NAMEs, shows those files; without, the types, the \
            configuration's patterns and every known extension.
            """)

    @Argument(help: "File names to look up (notes.md, settings.json, archive.tar.gz).")
    var names: [String] = []

    @OptionGroup var typeConfiguration: ConfigurationOption

    @Flag(help: "Only the extensions a document type validates.")
    var validated = false

    @Flag(help: "Print the table as JSON.")
    var json = false

    struct Table: Encodable {
        struct TypeRow: Encodable {
            let name: String
            let reads: [String]
            let kind: String
            let validator: String
        }
        struct PatternRow: Encodable {
            let pattern: String
            let type: String
        }
        struct FileRow: Encodable {
            let name: String
            let contentType: String?
            let documentType: String?
            let validated: Bool
            let decidedBy: String
        }
        let configuration: String?
        let types: [TypeRow]
        let patterns: [PatternRow]
        let files: [FileRow]
    }

    func run() throws {
        let configuration = try typeConfiguration.load(storePath: nil)
        let table = DocumentTypeTable(rules: configuration.rules)
        // Without names: every extension a content type or the configuration knows.
        let knownExtensions = Set(UTType.knownFilenameExtensions).union(configuration.rules.extensions.keys)
        let fileNames = names.isEmpty ? knownExtensions.sorted().map { "*." + $0 } : names
        let files: [Table.FileRow] = fileNames.map { name in
            // A row for an extension is the verdict on a file with that extension.
            let file = name.hasPrefix("*.") ? "x" + name.dropFirst() : name
            let verdict = table.verdict(forName: String(file))
            return .init(name: name, contentType: verdict.contentType, documentType: verdict.documentType,
                         validated: verdict.documentType != nil, decidedBy: verdict.reason)
        }.filter { !validated || $0.validated }
        let types: [Table.TypeRow] = table.types.map { type in
            .init(name: type.name, reads: type.readableContentTypes.map(\.identifier), kind: type.readsDirectories ? "package" : "file", validator: "built in")
        } + configuration.commandTypes.sorted { $0.key < $1.key }.map { name, validator in
            let extensions = table.configuredExtensions.filter { $0.value.name == name }.keys.sorted()
            return .init(name: name, reads: extensions.map { "." + $0 }, kind: "file",
                         validator: "command: " + validator.command.joined(separator: " ") + " (time limit \(CommandValidator.seconds(validator.timeout)))")
        }
        let patterns: [Table.PatternRow] = table.patterns.map { pattern in
            switch pattern.target {
            case .raw: .init(pattern: pattern.glob, type: "raw")
            case .document(let type): .init(pattern: pattern.glob, type: type.name)
            }
        }
        if json {
            return printJSON(Table(configuration: configuration.path, types: names.isEmpty ? types : [], patterns: names.isEmpty ? patterns : [], files: files))
        }
        if names.isEmpty {
            print("Configuration: \(configuration.path ?? "none (built-in types only)")")
            print("\nDocument types, in the order they are tried:")
            for type in types {
                print("  \(type.name.padded(to: 12)) \(type.kind.padded(to: 8)) \(type.validator.hasPrefix("command") ? type.validator + "; " : "")reads \(type.reads.joined(separator: ", "))")
            }
            if !patterns.isEmpty {
                print("\nName patterns (the longest matching one decides):")
                for pattern in patterns { print("  \(pattern.pattern.padded(to: 24)) → \(pattern.type)") }
            }
            print("\nFiles:")
        }
        let width = min(32, files.map(\.name.count).max() ?? 8)
        for row in files {
            let type = row.documentType.map { "validated by \($0)" } ?? "raw"
            let decided = row.decidedBy == "content type" ? "" : "  (\(row.decidedBy))"
            print("\(row.name.padded(to: width))  \((row.contentType ?? "-").padded(to: 40))  \(type)\(decided)")
        }
    }
}

private extension String {
    /// The string followed by spaces up to `width` characters; never cut short (unlike `padding`).
    func padded(to width: Int) -> String {
        count >= width ? self : padding(toLength: width, withPad: " ", startingAt: 0)
    }
}
