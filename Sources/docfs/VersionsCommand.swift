import ArgumentParser
import DocumentFS
import DocumentModel
import DocumentStore
import Foundation
import Glibc
import Synchronization
import SystemSupport

/// A document named by its path in a DocFS mount, or in a store's directory when no mount serves
/// it; it need not exist any more (`rm` can be undone).
struct DocumentPathArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The document: its path in a DocFS mount or in a store.", valueName: "path"))
    var path: String

    @Flag(help: """
        The documents removed at PATH (their versions are in MOUNT/.versions/.docfs/removed-UID/PATH, UID their owner's), \
        even where a document is there again. Without it, they are what a PATH no document has means.
        """)
    var removed = false

    enum Place {
        /// In a mount: its versions are read through `MOUNT/.versions`, with the reader's rights.
        case mount(mountPoint: String, document: String)
        /// In a store no mount serves: read from its archive (root's).
        case store(root: String, document: String)

        /// The path whose versions are meant: the document's, or one in a removal area (`VersionArchive.removedPath(of:owner:)`).
        var document: String {
            switch self {
            case .mount(_, let document), .store(_, let document): document
            }
        }

        /// The path a restore writes: the document's, also for a removed one.
        var target: String { VersionArchive.pathBeforeRemoval(document).flatMap { $0.isEmpty ? nil : $0 } ?? document }

        /// The same, for the versions of the documents removed there: the caller's own removals'
        /// where they have any, else another owner's (`VersionArchive.removalAreas`).
        var removed: Place {
            let removed = removedHistories.first ?? VersionArchive.removedPath(of: document, owner: getuid())
            switch self {
            case .mount(let mountPoint, _): return .mount(mountPoint: mountPoint, document: removed)
            case .store(let root, _): return .store(root: root, document: removed)
            }
        }

        /// The histories of the documents removed at the path, one a removal area that has any.
        private var removedHistories: [String] {
            guard !document.isEmpty else { return [] }
            switch self {
            case .mount(let mountPoint, let document):
                let view = mountPoint + "/.versions/"
                let names = (try? FileIO.directoryEntries(view + DirectoryStore.privateAreaName)) ?? []
                // Those the caller may enter before those they may not, each group in the areas' order.
                let found = VersionArchive.removalAreas(names, preferring: getuid()).map { $0 + "/" + document }.filter { !Self.missing(view + $0) }
                let open = found.filter { removed in FileSystemPath.withCString(view + removed) { access($0, R_OK | X_OK) } == 0 }
                return open + found.filter { removed in !open.contains { FileSystemPath.same($0, removed) } }
            case .store(let root, let document):
                guard let store = try? DirectoryStore(path: root, readOnly: true) else { return [] }
                return withExtendedLifetime(store) { store.versions?.removedPaths(of: document, preferring: getuid()) ?? [] }
            }
        }

        private static func missing(_ path: String) -> Bool {
            var status = stat()
            return FileSystemPath.withCString(path, { lstat($0, &status) }) != 0 && errno == ENOENT
        }

        /// Whether nothing is at the path now and it has no versions of its own, but documents
        /// removed there have: then they are meant (`rm` is undone by `docfs restore` as it was).
        var meansRemoved: Bool {
            guard !document.isEmpty else { return false }
            switch self {
            case .mount(let mountPoint, let document):
                guard Self.missing(mountPoint + "/" + document), Self.missing(mountPoint + "/.versions/" + document) else { return false }
            case .store(let root, let document):
                guard (try? FileStatus.of(path: root + "/" + document)) == nil, let store = try? DirectoryStore(path: root, readOnly: true),
                      withExtendedLifetime(store, { store.versions?.versions(of: document, measuring: false).isEmpty == true })
                else { return false }
            }
            return !removedHistories.isEmpty
        }
    }

    /// Where the document is. Throws, with a message, for a path in neither a mount nor a store.
    func place() throws -> Place {
        let place = try documentPlace()
        return removed || place.meansRemoved ? place.removed : place
    }

    private func documentPlace() throws -> Place {
        let absolute = Self.resolved(FileSystemPath.absolute(path) ?? path)
        if let mount = MountTable.docfsMount(containing: absolute) {
            return .mount(mountPoint: mount.mountPoint, document: Self.relative(absolute, to: mount.mountPoint))
        }
        // A store: the nearest folder above holding DocFS's private area.
        var folder = absolute
        while let slash = folder.utf8.lastIndex(of: UInt8(ascii: "/")) {
            folder = String(folder[..<slash])
            let root = folder.isEmpty ? "/" : folder
            if (try? FileStatus.of(path: root + "/" + DirectoryStore.privateAreaName))?.kind == .directory {
                let document = Self.relative(absolute, to: root)
                if let mountPoint = MountTable.docfsMountPoints(serving: root).first {
                    return .mount(mountPoint: mountPoint, document: document)
                }
                return .store(root: root, document: document)
            }
            if folder.isEmpty { break }
        }
        throw CommandFailure(message: "\(path) is neither in a DocFS mount nor in a store", status: ExitStatus.badStore)
    }

    /// `path` with its longest existing prefix resolved (links, `..`); the rest, which a removed
    /// document no longer has, as written.
    private static func resolved(_ path: String) -> String {
        var existing = path
        var rest: [String] = []
        while !existing.isEmpty {
            if let base = FileSystemPath.resolved(existing) {
                return ([base == "/" ? "" : base] + rest.reversed()).joined(separator: "/")
            }
            guard let slash = existing.utf8.lastIndex(of: UInt8(ascii: "/")) else { break }
            rest.append(String(existing[existing.utf8.index(after: slash)...]))
            existing = String(existing[..<slash])
        }
        return path
    }

    private static func relative(_ path: String, to root: String) -> String {
        let folder = root == "/" ? "" : root
        guard StorePath.isWithin(path, folder), !FileSystemPath.same(path, folder) else { return "" }
        return String(Substring(path.utf8.dropFirst(folder.utf8.count + 1)))
    }
}

/// One version as the commands show it.
struct ListedVersion: Encodable {
    let name: String
    let savedAt: String
    let size: Int64
    let savedBy: UInt32?
    let package: Bool
    /// Where to read it (in the mount's `.versions`, or in the store's archive).
    let path: String

    /// The versions of the document at `place`, oldest first.
    static func all(at place: DocumentPathArgument.Place) throws -> [ListedVersion] {
        switch place {
        case .mount(let mountPoint, let document):
            let folder = mountPoint + "/.versions/" + document
            let names: [String]
            do {
                names = try FileIO.directoryEntries(folder)
            } catch let error as SystemCallError where error.errno == EACCES {
                throw CommandFailure(message: "the versions of \(PrintableText.escaped(document)) are not yours to read (\(PrintableText.escaped(folder)))", status: ExitCode(1))
            } catch {
                throw CommandFailure(message: "\(PrintableText.escaped(document)) has no versions in the mount at \(PrintableText.escaped(mountPoint))", status: ExitCode(1))
            }
            return listed(names, in: folder)
        case .store(let root, let document):
            // The store stays open while its archive is read: the archive asks it what is where.
            let store = try DirectoryStore(path: root, readOnly: true)
            guard let archive = store.versions else { return [] }
            return withExtendedLifetime(store) { archive.versions(of: document) }.map { version in
                ListedVersion(
                    name: version.name, savedAt: VersionName.printedTime(of: version.name) ?? Self.format(version.savedAt), size: version.status.size, savedBy: version.savedBy,
                    package: version.isPackage, path: version.location)
            }
        }
    }

    /// The versions among `names`, the entries of a document's folder in a mount's view.
    private static func listed(_ names: [String], in folder: String) -> [ListedVersion] {
        names.sorted().compactMap { name in
            guard let time = VersionName.savedTime(of: name), let status = try? FileStatus.of(path: folder + "/" + name) else { return nil }
            let savedBy = (try? Paths.extendedAttribute(folder + "/" + name, name: VersionName.savedByAttribute))
                .flatMap { UInt32(String(decoding: $0, as: UTF8.self)) }
            return ListedVersion(
                name: name, savedAt: VersionName.printedTime(of: name) ?? Self.format(time), size: status.size, savedBy: savedBy, package: status.kind == .directory,
                path: folder + "/" + name)
        }
    }

    /// The versions of every document below the folder at `place`, each document's oldest first,
    /// documents in the order of their paths' bytes. In a mount, folders of the view the caller may
    /// not enter are passed by, and counted in `unreadable`.
    static func below(_ place: DocumentPathArgument.Place, unreadable: inout Int) throws -> [ListedVersion] {
        switch place {
        case .mount(let mountPoint, let folder):
            // A level of the view at a time, its folders listed by several threads at once: each
            // folder is a few round trips to the mount, which serves them on threads of its own.
            let found = Mutex<(listed: [(document: String, versions: [ListedVersion])], unreadable: Int)>(([], 0))
            var level = [folder]
            while !level.isEmpty {
                let below = Mutex<[String]>([])
                let folders = level
                DispatchQueue.concurrentPerform(iterations: folders.count) { index in
                    let document = folders[index]
                    let view = mountPoint + "/.versions" + (document.isEmpty ? "" : "/" + document)
                    let names: [String]
                    do {
                        names = try FileIO.directoryEntries(view)
                    } catch let error as SystemCallError where error.errno == EACCES {
                        found.withLock { $0.unreadable += 1 }
                        return
                    } catch {
                        return  // gone since its folder was listed
                    }
                    let versions = Self.listed(names, in: view)
                    let inside = names.filter { VersionName.savedTime(of: $0) == nil }.map { document.isEmpty ? $0 : document + "/" + $0 }
                    found.withLock { $0.listed.append((document, versions)) }
                    below.withLock { $0 += inside }
                }
                level = below.withLock { $0 }
            }
            let (listed, passed) = found.withLock { ($0.listed, $0.unreadable) }
            unreadable += passed
            // In the order of the documents' paths' bytes, as offline.
            return listed.sorted { PathKey($0.document) < PathKey($1.document) }.flatMap(\.versions)
        case .store(let root, let folder):
            let store = try DirectoryStore(path: root, readOnly: true)
            guard let archive = store.versions else { return [] }
            return withExtendedLifetime(store) { archive.allDocuments() }
                .filter { StorePath.isWithin($0.document, folder) }
                .sorted { PathKey($0.document) < PathKey($1.document) }
                .flatMap { entry in
                    entry.versions.map { version in
                        ListedVersion(
                            name: version.name, savedAt: VersionName.printedTime(of: version.name) ?? Self.format(version.savedAt), size: version.status.size, savedBy: version.savedBy,
                            package: version.isPackage, path: version.location)
                    }
                }
        }
    }

    static func format(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
    }

    static func userName(_ user: UInt32?) -> String {
        guard let user else { return "(unknown)" }
        return getpwuid(user).map { String(cString: $0.pointee.pw_name) } ?? String(user)
    }
}

/// `docfs versions PATH`: a document's earlier versions.
struct VersionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "versions",
        abstract: "List a document's earlier versions: when each was saved, its size, and who saved it.",
        discussion: """
            PATH is the document in a DocFS mount (read through MOUNT/.versions, with your rights) or \
            in a store no mount serves. A removed document's versions are listed by its old path, \
            with --removed where a document is there again. \
            For a folder, the versions of every document below it are listed (in a mount, those in \
            folders you may enter). Exits 1 when there are none. With --prune, removes the document's versions but the \
            newest --keep (of every document below PATH, for a folder), giving their space back at \
            once: in a mount, those you may remove (your own; root, all).
            """)

    @OptionGroup var document: DocumentPathArgument

    @Flag(help: "Print the versions as JSON.")
    var json = false

    @Flag(help: "Remove the versions (of every document below a folder) but the newest --keep.")
    var prune = false

    @Option(help: ArgumentHelp("With --prune: how many of each document's newest versions stay.", valueName: "n"))
    var keep = 1

    func validate() throws {
        guard keep >= 0 else { throw ValidationError("--keep takes 0 or more") }
    }

    func run() throws {
        let place = try document.place()
        if prune { return try VersionPruning(keep: keep).prune(at: place) }
        let givenUp = Self.givenUp(at: place)
        var versions: [ListedVersion]
        do {
            versions = try ListedVersion.all(at: place)
        } catch where !givenUp.isEmpty && !json {
            versions = []
        }
        var unreadable = 0
        if versions.isEmpty && givenUp.isEmpty && Self.isFolder(place) {
            versions = try ListedVersion.below(place, unreadable: &unreadable)
            if unreadable > 0 {
                FileHandle.standardError.write(Data("docfs: \(unreadable) folders below \(document.path) are not yours to read; their versions are not listed\n".utf8))
            }
        }
        if json {
            printJSON(versions)
            return
        }
        guard !versions.isEmpty || !givenUp.isEmpty else { throw CommandFailure(message: "\(document.path) has no earlier versions", status: ExitCode(1)) }
        for version in versions {
            let size = ByteCountFormatter.string(fromByteCount: version.size, countStyle: .binary)
            print("\(version.savedAt)  \(size.padding(toLength: 10, withPad: " ", startingAt: 0)) \(ListedVersion.userName(version.savedBy).padding(toLength: 10, withPad: " ", startingAt: 0)) \(PrintableText.escaped(version.path))\(version.package ? "/" : "")")
        }
        for event in givenUp {
            switch event.kind {
            case .dropped: print("version of \(ListedVersion.format(event.time)) dropped to make room on a full store")
            case .notKept: print("version of \(ListedVersion.format(event.time)) not kept: the store was full")
            }
        }
    }

    /// Whether `place` is a folder (not a package: a package's versions are its own) that is, or
    /// was, in the store.
    private static func isFolder(_ place: DocumentPathArgument.Place) -> Bool {
        switch place {
        case .mount(let mountPoint, let document):
            // A folder's versions, in the view, hold no version of their own (a removed folder has
            // no folder left in the mount).
            guard let names = try? FileIO.directoryEntries(mountPoint + "/.versions" + (document.isEmpty ? "" : "/" + document)) else { return false }
            return !names.contains { VersionName.savedTime(of: $0) != nil }
        case .store(let root, let document):
            // A removed folder has none in the store: the archive's documents below it are listed.
            return document.isEmpty || VersionArchive.pathBeforeRemoval(document) != nil
                || (try? FileStatus.of(path: root + "/" + document))?.kind == .directory
        }
    }

    /// What a full store gave up of this document's versions: through the mount, what the document
    /// tells its reader of their own (`user.docfs.versions-given-up`); where the store's record can
    /// be read (by root: it is in the store's private area), all of it, also for a removed document.
    private static func givenUp(at place: DocumentPathArgument.Place) -> [VersionsGivenUp.Event] {
        let root: String?
        switch place {
        case .store(let storeRoot, _): root = storeRoot
        case .mount(let mountPoint, let document):
            if let lines = try? Paths.extendedAttribute(mountPoint + "/" + document, name: VersionsGivenUp.attributeName) {
                return VersionsGivenUp.events(fromLines: Data(lines))
            }
            root = MountTable.docfsStore(mountedAt: mountPoint).flatMap { $0.utf8.first == UInt8(ascii: "/") ? $0 : nil }
        }
        guard let root else { return [] }
        return VersionsGivenUp(storeRoot: root).events().filter { FileSystemPath.same($0.document, place.target) }
    }
}

/// `docfs restore PATH --at TIME`: puts an earlier version back, as a save.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Put an earlier version of a document back; the version it replaces is kept in turn.",
        discussion: """
            In a mount this is an ordinary save through the mount, validated like any other (the same as \
            `cp MOUNT/.versions/PATH/VERSION MOUNT/PATH`). On a store no mount serves, root restores it \
            in the store's directory, validated by the store's document types as a mount would. TIME is \
            a version's name or the start of one (20261125T1408).
            """)

    @OptionGroup var document: DocumentPathArgument

    @OptionGroup var typeConfiguration: ConfigurationOption

    @Option(help: ArgumentHelp("The version: its name, or the start of its name.", valueName: "time"))
    var at: String

    func run() throws {
        let place = try document.place()
        let versions = try ListedVersion.all(at: place)
        let matching = versions.filter { $0.name.hasPrefix(Self.namePrefix(at)) }
        guard matching.count == 1, let version = matching.first else {
            let known = versions.map(\.name).joined(separator: "\n  ")
            throw CommandFailure(
                message: "\(matching.isEmpty ? "no" : "more than one") version of \(document.path) is named \(at)…; its versions:\n  \(known)",
                status: ExitCode(1))
        }
        switch place {
        case .mount(let mountPoint, _):
            let path = place.target
            if version.package {
                try restorePackage(at: mountPoint + "/" + path, to: version)
            } else {
                try copy(version.path, to: mountPoint + "/" + path)
            }
        case .store(let root, _):
            let path = place.target
            let store = try DirectoryStore.opened(at: root)
            let library = DocumentLibrary(store: store, rules: try typeConfiguration.load(storePath: root).rules)
            do {
                try library.restore(path, from: version.path, by: getuid())
            } catch {
                throw CommandFailure(message: "could not restore \(document.path): \(error)", status: ExitCode(1))
            }
        }
        print("restored \(document.path) to its version of \(version.savedAt)")
    }

    /// The start of a version's name that `at` gives: a name's start as it is, or a time as
    /// `docfs versions` prints it (`2026-11-25T14:08:41.123Z`: the same time, with `-` and `:`).
    static func namePrefix(_ at: String) -> String {
        var prefix = at.filter { $0 != "-" && $0 != ":" }
        // A printed time ends in Z after fewer fraction digits than a name has.
        if prefix.hasSuffix("Z"), prefix.contains("T"), !prefix.contains(".") || prefix.split(separator: ".").last.map({ $0.count < 7 }) == true {
            prefix.removeLast()
        }
        return prefix
    }

    /// Asks the mount to put the package's version back whole (`user.docfs.restore`): one
    /// validated commit, the replaced package kept as a version.
    private func restorePackage(at package: String, to version: ListedVersion) throws {
        // A removed package: made anew, empty, for the mount to fill; removed again if it cannot.
        var made = false
        if (try? FileStatus.of(path: package)) == nil {
            do {
                try Paths.makeDirectory(package, mode: 0o755)
                made = true
            } catch {
                throw CommandFailure(message: "could not restore \(PrintableText.escaped(package)): \(error)", status: ExitCode(1))
            }
        }
        defer { if made && (try? FileIO.directoryEntries(package))?.isEmpty == true { try? Paths.removeDirectory(package) } }
        do {
            try Array(version.name.utf8).withUnsafeBytes { value in
                try Paths.setExtendedAttribute(package, name: "user.docfs.restore", value: value, flags: 0)
            }
        } catch let error as SystemCallError {
            let why = switch error.errno {
            case EACCES, EPERM: "you may not write the package, or not read that version"
            case EIO: "the version does not decode as the package's type now (the mount's log says why)"
            case ENOENT: "the mount has no such version"
            case EINVAL: "it is not a package"
            default: "\(error)"
            }
            throw CommandFailure(message: "could not restore \(PrintableText.escaped(package)): \(why)", status: ExitCode(1))
        }
    }

    /// Writes the version over the document through the mount: the close answers whether the save
    /// was taken.
    private func copy(_ source: String, to destination: String) throws {
        do {
            try FileIO.writeCopy(of: source, over: destination)
        } catch {
            throw CommandFailure(
                message: "could not restore \(destination): \(error) (a refused save is kept: docfs quarantine list)", status: ExitCode(1))
        }
    }
}
