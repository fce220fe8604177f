import ArgumentParser
import DocumentFS
import DocumentStore
import Foundation

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "List the packages of a store that are drafts or corrupt, and why.",
        discussion: "A package is a draft until it first decodes; one that decoded once and no longer does is corrupt.")

    @Argument(help: "The store.")
    var store: String

    @Flag(help: "List valid packages too.")
    var all = false

    func run() throws {
        let directoryStore: DirectoryStore
        do {
            directoryStore = try DirectoryStore(path: store)
        } catch {
            FileHandle.standardError.write(Data("docfs: cannot open store \(store): \(error)\n".utf8))
            throw ExitStatus.badStore
        }
        let library = DocumentLibrary(store: directoryStore, types: StandardDocumentTypes.all, readOnly: true)
        for report in library.packageReports() {
            switch report.state {
            case .valid: if all { print("valid    \(report.path)") }
            case .draft(let reason): print("draft    \(report.path): \(reason)")
            case .corrupt(let reason): print("corrupt  \(report.path): \(reason)")
            }
        }
    }
}
