import ArgumentParser
import DocumentModel
import DocumentStore
import Foundation
import Glibc
import PostgresDocumentStore
import SystemSupport

/// `docfs quarantine`: see, restore and prune the refused and interrupted writes a store kept.
struct QuarantineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quarantine",
        abstract: "List, show, restore or prune the writes a store refused or a crash interrupted.",
        subcommands: [List.self, Show.self, Restore.self, Prune.self])

    /// Where the quarantine is read: through a mount point, its `.docfs/quarantine` view, where
    /// every user sees the items they wrote (root sees all) and restored copies are written with
    /// the user's own rights; else the store's own folder, which only its owner (root) can read.
    struct Location {
        let items: String
        /// The folder the documents' paths are relative to: the mount point, or the store.
        let documents: String

        /// The quarantine view of the mount at `store`, or, for a PostgreSQL location, of this
        /// machine's mount of it (each mount keeps its refused saves in its own mirror); nil when
        /// `store` names neither.
        static func view(of store: StoreArgument) -> Location? {
            if PostgresLocation.isPostgresLocation(store.location) {
                guard let location = try? PostgresLocation(store.location),
                      let mountPoint = MountTable.docfsMountPoints(serving: location).first
                else { return nil }
                return Location(items: mountPoint + "/" + Quarantine.relativePath, documents: mountPoint)
            }
            let named = FileSystemPath.resolved(store.location)
            guard let named, MountTable.docfsStore(mountedAt: named) != nil else { return nil }
            return Location(items: named + "/" + Quarantine.relativePath, documents: named)
        }

        private init(items: String, documents: String) {
            self.items = items
            self.documents = documents
        }

        init(_ store: StoreArgument) throws {
            if let view = Self.view(of: store) {
                self = view
                return
            }
            if PostgresLocation.isPostgresLocation(store.location) {
                throw ValidationError("no mount of \(PostgresLocation.redacted(store.location)) on this machine: a PostgreSQL store's refused saves are kept by the mount that refused them, in its mirror; name that mount point")
            }
            let directoryStore = try store.openStore(readOnly: true, hint: geteuid() == 0 ? nil : "a user other than root reads their own refused saves through a mount point: docfs quarantine list MOUNTPOINT")
            items = directoryStore.quarantineDirectory
            documents = directoryStore.rootURL.path
        }

        var all: [Quarantine.Item] { Quarantine.items(in: items) }

        /// An item named on the command line: its quarantine name, or a unique prefix of it, by
        /// bytes (an item's name holds its document's, which need not be UTF-8).
        func find(_ name: String) throws -> Quarantine.Item {
            let matches = all.filter { $0.name.utf8.starts(with: name.utf8) }
            if let exact = matches.first(where: { FileSystemPath.same($0.name, name) }) { return exact }
            guard matches.count == 1, let item = matches.first else {
                throw ValidationError(matches.isEmpty ? "no quarantined item named \(name) (see `docfs quarantine list`)" : "\(name) names \(matches.count) items; give more of the name")
            }
            return item
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the quarantined items, oldest first.")
        @OptionGroup var store: StoreArgument
        @Flag(help: "Print the list as JSON.") var json = false

        static let unreadable = "(the note beside this item does not parse)"

        struct Entry: Encodable {
            let name: String
            let document: String
            let time: String
            let reason: String
            let bytes: Int64
        }

        func run() throws {
            let entries = try Location(store).all.map { item in
                let note = item.note
                return Entry(name: item.name, document: note?.document ?? "?", time: note?.time ?? "?", reason: note?.reason ?? Self.unreadable, bytes: item.bytes)
            }
            if json { return printJSON(entries) }
            if entries.isEmpty { print("the quarantine is empty") }
            for entry in entries {
                print("\(PrintableText.escaped(entry.name))\n  \(PrintableText.escaped(entry.document)): \(PrintableText.escaped(entry.reason))")
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show an item's note and where its bytes are.")
        @OptionGroup var store: StoreArgument
        @Argument(help: "The item's name (or a unique prefix).") var item: String

        func run() throws {
            let found = try Location(store).find(item)
            let note = found.note
            print("""
                document: \(PrintableText.escaped(note?.document ?? "?"))
                time:     \(note?.time ?? "?")
                reason:   \(PrintableText.escaped(note?.reason ?? List.unreadable))
                bytes:    \(found.bytes) in \(PrintableText.escaped(found.path))
                """)
        }
    }

    struct Restore: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put a refused version back beside its document, never over it, for you to fix.",
            discussion: """
                The copy is named DOCUMENT.refused-TIME: no document type claims that name, so it can be \
                read and edited through the mount; rename it over the document once it is fixed (the \
                rename is validated).
                """)
        @OptionGroup var store: StoreArgument
        @Argument(help: "The item's name (or a unique prefix).") var item: String

        func run() throws {
            let location = try Location(store)
            let found = try location.find(item)
            guard let note = found.note else {
                throw ValidationError("the note beside \(PrintableText.escaped(found.name)) does not parse, so which document it was for is not known; copy \(PrintableText.escaped(found.path)) yourself")
            }
            // The note names the document by its store path: every name on it is checked, and the
            // copy is made beside the document (never through a link), through the mount when the
            // quarantine was read through one.
            let time = note.time.filter { $0.isLetter || $0.isNumber || $0 == "." }
            guard var names = try? StorePath.components(note.document), let last = names.popLast(),
                  let copyName = try? FileName(last.string + ".refused-" + time)
            else {
                throw ValidationError("the note beside \(PrintableText.escaped(found.name)) names \(PrintableText.escaped(note.document)), which is no path in a store")
            }
            var folder = location.documents
            for name in names {
                folder += "/" + name.string
                do {
                    try Paths.makeDirectory(folder, mode: 0o755)
                } catch let error as SystemCallError where error.errno == EEXIST {}
            }
            let destination = folder + "/" + copyName.string
            guard (try? FileStatus.of(path: destination)) == nil else {
                throw ValidationError("\(PrintableText.escaped(destination)) exists already; move it away first")
            }
            try FileWrapper(url: URL(fileURLWithPath: found.path)).write(to: URL(fileURLWithPath: destination))
            print(PrintableText.escaped(destination))
        }
    }

    struct Prune: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove quarantined items: those older than --days, or --all.")
        @OptionGroup var store: StoreArgument
        @Option(help: "Remove the items older than this many days.") var days: Double?
        @Flag(help: "Remove every item.") var all = false

        func validate() throws {
            guard all || days != nil else { throw ValidationError("say what to prune: --days N or --all") }
        }

        func run() throws {
            let directoryStore = try store.openStore(readOnly: false)
            var removed = 0
            for item in directoryStore.quarantinedItems where all || Date().timeIntervalSince(item.date) > (days ?? 0) * 24 * 3600 {
                try directoryStore.removeQuarantined(item)
                removed += 1
            }
            print("removed \(removed) item\(removed == 1 ? "" : "s")")
        }
    }
}
