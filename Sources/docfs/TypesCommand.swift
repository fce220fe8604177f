import ArgumentParser
import DocumentFS
import DocumentModel
import Foundation
import SystemSupport
import TypeConfiguration

/// `docfs types`: which files are documents of which type, by the one rule the mount uses. By
/// default only what decides something (the patterns, and each type with what it claims); `--all`
/// lists every extension known; `docfs types FILE…` explains each file.
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
            data, stored as written. Without FILEs, shows the patterns and the document types with the \
            extensions they claim (--all: every known extension); with FILEs, what each is and why.
            """)

    @Argument(help: "Files (or names: notes.md, settings.json, archive.tar.gz) to explain.")
    var files: [String] = []

    @OptionGroup var typeConfiguration: ConfigurationOption

    @Flag(help: "List every known extension, validated or raw.")
    var all = false

    @Flag(help: "With --all, only the extensions a document type validates.")
    var validated = false

    @Flag(help: "Print the answer as JSON.")
    var json = false

    struct Table: Encodable {
        struct Claim: Encodable {
            let fileExtension: String
            let contentType: String
        }
        struct TypeRow: Encodable {
            let name: String
            let reads: [String]
            let kind: String
            let validator: String
            /// The extensions this type validates, with the content type each is read as.
            let claims: [Claim]
        }
        struct PatternRow: Encodable {
            let pattern: String
            let type: String
        }
        struct FileRow: Encodable {
            let name: String
            let contentType: String?
            /// The content type for people (a MIME type for a dynamic one).
            let contentTypeName: String?
            let documentType: String?
            let validated: Bool
            let isPackage: Bool
            let decidedBy: String
        }
        let configuration: String?
        let types: [TypeRow]
        let patterns: [PatternRow]
        /// How many known extensions no type claims (stored raw).
        let rawExtensions: Int
        let files: [FileRow]
    }

    func run() throws {
        let configuration = try typeConfiguration.load(storePath: nil)
        let table = DocumentTypeTable(rules: configuration.rules)
        let knownExtensions = Set(UTType.knownFilenameExtensions).union(configuration.rules.extensions.keys).sorted()
        let verdicts = knownExtensions.map { ($0, table.verdict(forName: "x." + $0)) }
        let types = typeRows(table, configuration: configuration, verdicts: verdicts)
        let patterns: [Table.PatternRow] = table.patterns.map { pattern in
            switch pattern.target {
            case .raw: .init(pattern: pattern.glob, type: "raw")
            case .document(let type): .init(pattern: pattern.glob, type: type.name)
            }
        }
        let rawExtensions = verdicts.filter { $0.1.documentType == nil }.count
        let fileRows: [Table.FileRow]
        if !files.isEmpty {
            fileRows = files.map { file in row(file, verdict: verdict(table, forFile: file)) }
        } else if all {
            fileRows = verdicts.map { row("*." + $0.0, verdict: $0.1) }.filter { !validated || $0.validated }
        } else {
            fileRows = []
        }
        if json {
            let explaining = !files.isEmpty
            return printJSON(Table(
                configuration: configuration.path, types: explaining ? [] : types, patterns: explaining ? [] : patterns,
                rawExtensions: rawExtensions, files: fileRows))
        }
        if files.isEmpty {
            print("Configuration: \(configuration.path ?? "none (built-in types only)")")
            if !patterns.isEmpty {
                print("\nName patterns (the longest matching one decides):")
                for pattern in patterns { print("  \(pattern.pattern.padded(to: 24)) → \(pattern.type)") }
            }
            print("\nDocument types, in the order they are tried, and the extensions each validates:")
            for type in types { printType(type) }
            print("\n\(rawExtensions) other known extensions are raw: stored as written, never validated (--all lists them).")
            guard all else { return }
            print("\nFiles:")
        }
        let width = min(32, fileRows.map { PrintableText.escaped($0.name).count }.max() ?? 8)
        for row in fileRows {
            let type = row.documentType.map { "validated by \($0)\(row.isPackage ? " (a package)" : "")" } ?? "raw"
            print("\(PrintableText.escaped(row.name).padded(to: width))  \((row.contentTypeName ?? "-").padded(to: 40))  \(type)  (\(row.decidedBy))")
        }
    }

    /// Each type with what it reads and the extensions it claims, grouped by content type.
    private func typeRows(_ table: DocumentTypeTable, configuration: TypeConfiguration, verdicts: [(String, DocumentTypeTable.Verdict)]) -> [Table.TypeRow] {
        var claims: [String: [Table.Claim]] = [:]
        for (fileExtension, verdict) in verdicts {
            guard let type = verdict.documentType else { continue }
            claims[type, default: []].append(.init(fileExtension: fileExtension, contentType: verdict.contentTypeName ?? "-"))
        }
        let builtIn: [Table.TypeRow] = table.types.map { type in
            .init(name: type.name, reads: type.readableContentTypes.map(\.identifier), kind: type.readsDirectories ? "package" : "file",
                  validator: "built in", claims: claims[type.name] ?? [])
        }
        return builtIn + configuration.commandTypes.sorted { $0.key < $1.key }.map { name, validator in
            let extensions = table.configuredExtensions.filter { $0.value.name == name }.keys.sorted()
            return .init(name: name, reads: extensions.map { "." + $0 }, kind: "file",
                         validator: "command: " + validator.command.joined(separator: " ") + " (time limit \(CommandValidator.seconds(validator.timeout)))",
                         claims: claims[name] ?? [])
        }
    }

    private func printType(_ type: Table.TypeRow) {
        print("  \(type.name) (\(type.kind), \(type.validator)): reads \(type.reads.joined(separator: ", "))")
        let byContentType = Dictionary(grouping: type.claims, by: \.contentType).sorted { $0.key < $1.key }
        if byContentType.isEmpty { print("      no known extension") }
        for (contentType, claims) in byContentType {
            let extensions = claims.map { "." + $0.fileExtension }.joined(separator: " ")
            print(Self.wrapped("\(contentType): \(extensions)", indent: 6, width: 100))
        }
    }

    /// `text` broken at spaces into lines of at most `width` columns, each indented.
    static func wrapped(_ text: String, indent: Int, width: Int) -> String {
        let margin = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = margin
        for word in text.split(separator: " ") {
            if line.count > indent && line.count + 1 + word.count > width {
                lines.append(line)
                line = margin + "  "
            }
            line += (line.count > indent && !line.hasSuffix("  ") ? " " : "") + word
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }

    /// The verdict on `file`: a folder that exists is judged as a folder (a package, or a plain folder).
    private func verdict(_ table: DocumentTypeTable, forFile file: String) -> DocumentTypeTable.Verdict {
        let isDirectory = (try? FileStatus.of(path: file))?.kind == .directory
        return table.verdict(forName: StorePath.lastComponent(file.utf8.count > 1 && file.hasSuffix("/") ? String(file.dropLast()) : file), isDirectory: isDirectory)
    }

    private func row(_ name: String, verdict: DocumentTypeTable.Verdict) -> Table.FileRow {
        .init(name: name, contentType: verdict.contentType, contentTypeName: verdict.contentTypeName, documentType: verdict.documentType, validated: verdict.documentType != nil,
              isPackage: verdict.isPackage, decidedBy: verdict.reason)
    }
}

private extension String {
    /// The string followed by spaces up to `width` characters; never cut short (unlike `padding`).
    func padded(to width: Int) -> String {
        count >= width ? self : padding(toLength: width, withPad: " ", startingAt: 0)
    }
}
