import ArgumentParser
import Foundation
import PostgresDocumentStore

/// `docfs retention`: shows or sets a PostgreSQL store's space cap for versions, the one policy
/// every mount of the store applies (a mount's `--versions-cap` bounds only its own mirror).
struct RetentionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Show or set the space cap a PostgreSQL store's versions share, for every mount.",
        discussion: """
            Versions are thinned by age on every store (see VERSIONS in docfs(1)); a PostgreSQL \
            store's space cap is kept in its database, so every mount drops the same versions, \
            oldest first, while they hold more content than the cap (each document keeps its \
            newest). Without --cap, prints the cap ("none" when there is none, the default). \
            Exits 0, 3 when the database cannot be reached or has no such store, 64 for a bad size.
            """)

    @OptionGroup var store: StoreArgument

    @Option(help: ArgumentHelp("The cap: bytes, or with K, M, G, T; 'none' removes it.", valueName: "size"))
    var cap: String?

    func validate() throws {
        if let cap, cap != "none", ByteCount.parse(cap) == nil {
            throw ValidationError("--cap '\(cap)' is not a size (examples: 500M, 20G) or 'none'")
        }
    }

    func run() throws {
        guard let location = try store.postgresLocation else {
            FileHandle.standardError.write(Data("docfs: \(store.location) is not a PostgreSQL store: a directory store has one mount, whose --versions-cap is its cap\n".utf8))
            throw ExitStatus.badStore
        }
        do {
            if let cap {
                try StoreRetention.setCap(cap == "none" ? nil : ByteCount.parse(cap), of: location)
            }
            let current = try StoreRetention.cap(of: location)
            print("versions cap of \(location): \(current.map { "\($0) bytes" } ?? "none")")
        } catch {
            FileHandle.standardError.write(Data("docfs: \(location): \(error)\n".utf8))
            throw ExitStatus.badStore
        }
    }
}
