import ArgumentParser
import DocumentFS
import DocumentStore
import Foundation
import SystemSupport
import Glibc
import Logging
import PostgresDocumentStore

/// A store named on the command line, directly or by a DocFS mount point that serves it; opened
/// read-only, so commands that only look never write (and work on read-only stores and mounts).
struct StoreArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The store, or a DocFS mount point serving it.", valueName: "store"))
    var location: String

    /// The PostgreSQL store named directly or by the mount point serving it (its fsname).
    var postgresLocation: PostgresLocation? {
        get throws {
            let named = PostgresLocation.isPostgresLocation(location) ? location : (try? path())
            guard let named, PostgresLocation.isPostgresLocation(named) else { return nil }
            do {
                return try PostgresLocation(named)
            } catch {
                // Said here: taken for a folder, the location (and any password in it) was repeated.
                FileHandle.standardError.write(Data("docfs: store \(error)\n".utf8))
                throw ExitStatus.badStore
            }
        }
    }

    /// The store's directory.
    func path() throws -> String {
        if PostgresLocation.isPostgresLocation(location) { return location }
        let absolute = FileSystemPath.resolved(location) ?? location
        if let store = MountTable.docfsStore(mountedAt: absolute) { return store }
        return absolute
    }

    /// The store's directory, opened; `hint` is added to the message when it cannot be.
    func openStore(readOnly: Bool = true, hint: String? = nil) throws -> DirectoryStore {
        let path = try path()
        do {
            return try DirectoryStore(path: path, readOnly: readOnly)
        } catch {
            FileHandle.standardError.write(Data("docfs: cannot open store \(location): \(error)\(hint.map { "\n(\($0))" } ?? "")\n".utf8))
            throw ExitStatus.badStore
        }
    }

    func openLibrary(configuration: ConfigurationOption) throws -> DocumentLibrary {
        if let postgres = try postgresLocation {
            let types = try configuration.load(storePath: NSTemporaryDirectory())
            return DocumentLibrary(store: try openPostgresStore(postgres), rules: types.rules, readOnly: true)
        }
        let types = try configuration.load(storePath: try path())
        return DocumentLibrary(store: try openStore(), rules: types.rules, readOnly: true)
    }

    /// A PostgreSQL store read into a temporary mirror, removed when the command ends (the
    /// database is not written).
    func openPostgresStore(_ postgres: PostgresLocation) throws -> PostgresStore {
        let mirror = NSTemporaryDirectory() + "docfs-\(getpid())-mirror"
        atexit { _ = try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "docfs-\(getpid())-mirror") }
        var logger = Logger(label: "docfs") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        do {
            return try PostgresStore(location: postgres, cacheDirectory: mirror, readOnly: true, logger: logger)
        } catch {
            FileHandle.standardError.write(Data("docfs: cannot open store \(location): \(error)\n".utf8))
            throw ExitStatus.badStore
        }
    }
}

/// JSON for `--json` output: sorted keys, one document.
func printJSON<Value: Encodable>(_ value: Value) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    if let data = try? encoder.encode(value) { print(String(decoding: data, as: UTF8.self)) }
}

/// Whether standard error is a terminal (progress bars go there only then).
var standardErrorIsTerminal: Bool { isatty(2) == 1 }
