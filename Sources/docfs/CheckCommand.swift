import ArgumentParser
import DocumentFS
import Foundation
import Glibc
import PostgresDocumentStore
import SystemSupport

/// `docfs check`: decodes every document of a store, reading only, and reports each that does not.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Decode every document of a store, reading only; report each one that does not decode.",
        discussion: """
            Exits 0 when every document decodes, 1 when one does not (a corrupt document, or a package \
            that has never decoded) or when a PostgreSQL store holds rows that are not served (a name \
            that is no file name), 3 when the store cannot be opened. Writes nothing: works on a \
            read-only store and through a read-only mount. Run it before and after a backup.
            """)

    @OptionGroup var store: StoreArgument

    @OptionGroup var typeConfiguration: ConfigurationOption

    @OptionGroup var parserLimits: ParserLimitsOption

    @Flag(help: "Print the report as JSON.")
    var json = false

    @Flag(help: "List the documents that decode, too.")
    var all = false

    struct Report: Encodable {
        struct Problem: Encodable {
            let path: String
            let type: String
            let contentType: String
            let state: String
            let reason: String
        }
        /// A row of a PostgreSQL store that no mount serves.
        struct InvalidRow: Encodable {
            let id: Int64
            let folder: String
            /// The name's bytes in hexadecimal.
            let name: String
            let problem: String
        }
        let store: String
        let checked: Int
        let valid: Int
        let problems: [Problem]
        let emptyDrafts: [String]
        let invalidRows: [InvalidRow]
    }

    func run() throws {
        parserLimits.install()
        let library = try store.openLibrary(configuration: typeConfiguration)
        let documents = library.documents()
        let progress = ProgressLine(total: documents.count, noun: "documents", enabled: standardErrorIsTerminal && !json)
        var problems: [Report.Problem] = []
        var emptyDrafts: [String] = []
        var valid = 0
        for (index, document) in documents.enumerated() {
            let report = library.check(document)
            progress.update(done: index + 1)
            let type = report.typeName.split(separator: ".").last.map(String.init) ?? report.typeName
            switch report.state {
            case .valid:
                valid += 1
                if all && !json { progress.print("valid    \(PrintableText.escaped(report.path))") }
            case .draft(let reason) where !report.isPackage:
                emptyDrafts.append(report.path)
                if all && !json { progress.print("draft    \(PrintableText.escaped(report.path)): \(PrintableText.escaped(reason))") }
            case .draft(let reason):
                problems.append(.init(path: report.path, type: type, contentType: report.contentType, state: "draft", reason: reason))
                if !json { progress.print("draft    \(PrintableText.escaped(report.path)) (\(type)): \(PrintableText.escaped(reason)) — a package that has never decoded") }
            case .corrupt(let reason):
                problems.append(.init(path: report.path, type: type, contentType: report.contentType, state: "corrupt", reason: reason))
                if !json { progress.print("corrupt  \(PrintableText.escaped(report.path)) (\(type)): \(PrintableText.escaped(reason))") }
            }
        }
        progress.finish()
        let invalidRows = ((library.store as? PostgresStore)?.invalidRows ?? []).map { row in
            Report.InvalidRow(id: row.id, folder: row.folder, name: row.nameDescription, problem: row.problem)
        }
        let storePath = try store.path()
        if json {
            printJSON(Report(store: storePath, checked: documents.count, valid: valid, problems: problems, emptyDrafts: emptyDrafts, invalidRows: invalidRows))
        } else {
            for row in invalidRows {
                let folder = row.folder.isEmpty ? "the root folder" : PrintableText.escaped(row.folder)
                print("invalid  row \(row.id) in \(folder): \(PrintableText.escaped(row.problem)); its name's bytes are \(row.name)")
            }
            let drafts = emptyDrafts.isEmpty ? "" : ", \(emptyDrafts.count) empty"
            let rows = invalidRows.isEmpty ? "" : "; \(invalidRows.count) row\(invalidRows.count == 1 ? "" : "s") of the database not served"
            print("checked \(documents.count) documents in \(storePath): \(valid) decode\(drafts), \(problems.count) do not\(rows)")
        }
        if !problems.isEmpty || !invalidRows.isEmpty { throw ExitCode(1) }
    }
}

/// A one-line progress report on standard error, redrawn at most ten times a second: how many of
/// how many, the rate, and the time left.
final class ProgressLine {
    private let total: Int
    private let noun: String
    private let enabled: Bool
    private let started = Date()
    private var lastDrawn = Date.distantPast
    private var drawn = false

    init(total: Int, noun: String, enabled: Bool) {
        self.total = total
        self.noun = noun
        self.enabled = enabled && total > 0
    }

    func update(done: Int) {
        guard enabled, Date().timeIntervalSince(lastDrawn) >= 0.1 || done == total else { return }
        lastDrawn = Date()
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        let rate = Double(done) / elapsed
        let remaining = rate > 0 ? Double(total - done) / rate : 0
        let line = String(format: "\r%d/%d %@ · %.0f/s · %@ left", done, total, noun, rate, Self.duration(remaining))
        FileHandle.standardError.write(Data(line.utf8))
        drawn = true
    }

    /// Prints a line above the progress line.
    func print(_ line: String) {
        clear()
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func finish() { clear() }

    private func clear() {
        guard drawn else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        drawn = false
    }

    private static func duration(_ seconds: Double) -> String {
        seconds < 60 ? String(format: "%.0f s", seconds) : String(format: "%d min %02d s", Int(seconds) / 60, Int(seconds) % 60)
    }
}
