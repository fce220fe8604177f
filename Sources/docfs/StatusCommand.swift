import ArgumentParser
import DocumentFS
import DocumentStore
import Foundation
import SystemSupport

/// `docfs status`: what needs the user's attention in a store, without decoding every document.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a store's packages that are drafts or corrupt, its last refused writes, and its quarantine.",
        discussion: """
            A package is a draft until it first decodes; one that decoded once and no longer does is \
            corrupt. Exits 0 when no package is corrupt, 1 when one is, 3 when the store cannot be \
            opened. Writes nothing. `docfs check` decodes every document.
            """)

    @OptionGroup var store: StoreArgument

    @OptionGroup var typeConfiguration: ConfigurationOption

    @Flag(help: "List valid packages too.")
    var all = false

    @Flag(help: "Print the status as JSON.")
    var json = false

    @Option(help: "How many of the last refusals to show.")
    var refusals = 10

    struct Status: Encodable {
        struct Package: Encodable {
            let path: String
            let state: String
            let reason: String?
        }
        struct Refusal: Encodable {
            let document: String
            let time: String
            let reason: String
            let kept: String
        }
        let store: String
        let packages: [Package]
        let lastRefusals: [Refusal]
        let quarantineItems: Int
        let quarantineBytes: Int64
        /// Earlier versions kept, of how many documents, and the space only they take.
        let versions: Int
        let versionedDocuments: Int
        let versionBytes: Int64
        /// Versions a full store gave up: dropped to make room for a write, or never kept.
        let versionsDroppedForSpace: Int
        let versionsNotKept: Int
    }

    func run() throws {
        // A PostgreSQL store: its packages from the database; the quarantine is each mount's own,
        // read through the mount point's view (or in its mirror directory, `docfs status MIRROR`).
        let postgres = try store.postgresLocation
        let types = try typeConfiguration.load(storePath: postgres == nil ? try store.path() : NSTemporaryDirectory())
        let postgresStore = try postgres.map { try store.openPostgresStore($0) }
        let directoryStore = try postgresStore?.mirror ?? store.openStore()
        let library = DocumentLibrary(store: postgresStore ?? directoryStore, rules: types.rules, readOnly: true)
        let packages: [Status.Package] = library.packageReports().compactMap { report in
            switch report.state {
            case .valid: all ? .init(path: report.path, state: "valid", reason: nil) : nil
            case .draft(let reason): .init(path: report.path, state: "draft", reason: reason)
            case .corrupt(let reason): .init(path: report.path, state: "corrupt", reason: reason)
            }
        }
        let items = QuarantineCommand.Location.view(of: store)?.all ?? directoryStore.quarantinedItems
        let lastRefusals = items.suffix(refusals).reversed().map { item in
            let note = item.note
            return Status.Refusal(document: note?.document ?? "?", time: note?.time ?? "?", reason: note?.reason ?? QuarantineCommand.List.unreadable, kept: item.path)
        }
        // A PostgreSQL store's versions are the database's; a directory store's, its archive's.
        let versions: (versions: Int, documents: Int, bytes: Int64)
        if let postgresStore {
            // A database no mount of this DocFS has migrated has no versions table, and no versions.
            versions = (try? postgresStore.versionStatistics()) ?? (0, 0, 0)
        } else {
            let versioned = directoryStore.versions?.allDocuments().map(\.versions) ?? []
            versions = (versioned.reduce(0) { $0 + $1.count }, versioned.count, versioned.joined().reduce(0) { $0 + $1.exclusiveBytes })
        }
        let givenUp = directoryStore.versionsGivenUp?.events() ?? []
        let dropped = givenUp.filter { $0.kind == .dropped }, notKept = givenUp.filter { $0.kind == .notKept }
        let status = Status(
            store: try store.path(), packages: packages, lastRefusals: Array(lastRefusals),
            quarantineItems: items.count, quarantineBytes: items.reduce(0) { $0 + $1.bytes },
            versions: versions.versions, versionedDocuments: versions.documents, versionBytes: versions.bytes,
            versionsDroppedForSpace: dropped.count, versionsNotKept: notKept.count)
        if json {
            printJSON(status)
        } else {
            for package in packages {
                print("\(package.state.padding(toLength: 8, withPad: " ", startingAt: 0)) \(PrintableText.escaped(package.path))\(package.reason.map { ": \(PrintableText.escaped($0))" } ?? "")")
            }
            if packages.isEmpty { print("packages: none that need attention") }
            if lastRefusals.isEmpty {
                print("refused writes: none kept")
            } else {
                print("last refused writes (newest first):")
                for refusal in lastRefusals {
                    print("  \(refusal.time)  \(PrintableText.escaped(refusal.document)): \(PrintableText.escaped(refusal.reason))\n    kept in \(PrintableText.escaped(refusal.kept))")
                }
            }
            print("quarantine: \(items.count) item\(items.count == 1 ? "" : "s"), \(ByteCountFormatter.string(fromByteCount: status.quarantineBytes, countStyle: .binary))")
            print("versions: \(status.versions) of \(status.versionedDocuments) document\(status.versionedDocuments == 1 ? "" : "s"), \(ByteCountFormatter.string(fromByteCount: status.versionBytes, countStyle: .binary)) of their own")
            if !dropped.isEmpty {
                let bytes = ByteCountFormatter.string(fromByteCount: dropped.reduce(0) { $0 + $1.bytes }, countStyle: .binary)
                print("versions dropped to make room on a full store: \(dropped.count) (\(bytes)); the last, of \(PrintableText.escaped(dropped[dropped.count - 1].document)) saved \(ListedVersion.format(dropped[dropped.count - 1].time))")
            }
            if let last = notKept.last {
                print("versions not kept, the store being full: \(notKept.count); the last, of \(PrintableText.escaped(last.document)) at \(ListedVersion.format(last.time))")
            }
        }
        if packages.contains(where: { $0.state == "corrupt" }) { throw ExitCode(1) }
    }
}
