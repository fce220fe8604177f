import ArgumentParser
import DocumentStore
import Foundation
import Glibc
import SystemSupport

/// `docfs quarantine`: see, restore and prune the refused and interrupted writes a store kept.
struct QuarantineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quarantine",
        abstract: "List, show, restore or prune the writes a store refused or a crash interrupted.",
        subcommands: [List.self, Show.self, Restore.self, Prune.self])

    /// An item named on the command line: its quarantine name, or a unique prefix of it.
    static func find(_ name: String, in store: DirectoryStore) throws -> Quarantine.Item {
        let matches = store.quarantinedItems.filter { $0.name == name || $0.name.hasPrefix(name) }
        if let exact = matches.first(where: { $0.name == name }) { return exact }
        guard matches.count == 1, let item = matches.first else {
            throw ValidationError(matches.isEmpty ? "no quarantined item named \(name) (see `docfs quarantine list`)" : "\(name) names \(matches.count) items; give more of the name")
        }
        return item
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the quarantined items, oldest first.")
        @OptionGroup var store: StoreArgument
        @Flag(help: "Print the list as JSON.") var json = false

        struct Entry: Encodable {
            let name: String
            let document: String
            let time: String
            let reason: String
            let bytes: Int64
        }

        func run() throws {
            let entries = try store.openStore().quarantinedItems.map { item in
                let note = item.note
                return Entry(name: item.name, document: note["document"] ?? "?", time: note["time"] ?? "?", reason: note["reason"] ?? "?", bytes: item.bytes)
            }
            if json { return printJSON(entries) }
            if entries.isEmpty { print("the quarantine is empty") }
            for entry in entries { print("\(entry.name)\n  \(entry.document): \(entry.reason)") }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show an item's note and where its bytes are.")
        @OptionGroup var store: StoreArgument
        @Argument(help: "The item's name (or a unique prefix).") var item: String

        func run() throws {
            let found = try QuarantineCommand.find(item, in: try store.openStore())
            let note = found.note
            print("document: \(note["document"] ?? "?")\ntime:     \(note["time"] ?? "?")\nreason:   \(note["reason"] ?? "?")\nbytes:    \(found.bytes) in \(found.path)")
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
            let directoryStore = try store.openStore(readOnly: false)
            let found = try QuarantineCommand.find(item, in: directoryStore)
            let document = found.note["document"] ?? found.name
            let time = (found.note["time"] ?? "unknown").replacingOccurrences(of: ":", with: "")
            let destination = directoryStore.rootURL.path + "/" + document + ".refused-" + time
            guard (try? FileStatus.of(path: destination)) == nil else {
                throw ValidationError("\(destination) exists already; move it away first")
            }
            let directory = (destination as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: found.path, toPath: destination)
            print(destination)
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
