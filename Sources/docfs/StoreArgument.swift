import ArgumentParser
import DocumentFS
import DocumentStore
import Foundation
import Glibc

/// A store named on the command line, directly or by a DocFS mount point that serves it; opened
/// read-only, so commands that only look never write (and work on read-only stores and mounts).
struct StoreArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The store, or a DocFS mount point serving it.", valueName: "store"))
    var location: String

    /// The store's directory.
    func path() throws -> String {
        let absolute = realpath(location, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? location
        if let store = MountTable.docfsStore(mountedAt: absolute) { return store }
        return absolute
    }

    func openStore(readOnly: Bool = true) throws -> DirectoryStore {
        let path = try path()
        do {
            return try DirectoryStore(path: path, readOnly: readOnly)
        } catch {
            FileHandle.standardError.write(Data("docfs: cannot open store \(location): \(error)\n".utf8))
            throw ExitStatus.badStore
        }
    }

    func openLibrary(configuration: ConfigurationOption) throws -> DocumentLibrary {
        let types = try configuration.load(storePath: try path())
        return DocumentLibrary(store: try openStore(), rules: types.rules, readOnly: true)
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
