import ArgumentParser
import Foundation
import PostgresDocumentStore

/// `docfs gc`: removes a PostgreSQL database's content chunks that no document uses any more.
struct CollectGarbageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc",
        abstract: "Remove the content chunks no document of a PostgreSQL store uses any more.",
        discussion: """
            Content is stored in chunks shared by every version and document that holds them, so a \
            version saved over or a document removed leaves its chunks in the database until this \
            runs. Safe while the store is mounted: saves that begin meanwhile wait for it (for as \
            long as it takes to read every item's chunk list once). Covers every store in the \
            database. Exits 0, or 3 when the database cannot be reached.
            """)

    @OptionGroup var store: StoreArgument

    func run() throws {
        guard let location = try store.postgresLocation else {
            FileHandle.standardError.write(Data("docfs: \(store.location) is not a PostgreSQL store (a directory store has no chunks to collect)\n".utf8))
            throw ExitStatus.badStore
        }
        let result: ChunkCollector.Result
        do {
            result = try ChunkCollector.collect(location)
        } catch {
            FileHandle.standardError.write(Data("docfs: cannot collect unused chunks in \(location): \(error)\n".utf8))
            throw ExitStatus.badStore
        }
        print("removed \(result.removedChunks) chunks (\(Self.size(result.removedBytes))) no document uses; kept \(result.keptChunks) chunks (\(Self.size(result.keptBytes)))")
    }

    private static func size(_ bytes: Int64) -> String {
        bytes < 1 << 20 ? "\(bytes) bytes" : String(format: "%.1f MiB", Double(bytes) / Double(1 << 20))
    }
}
