import Foundation
import Glibc
import Synchronization
import SystemSupport

/// The earlier versions of a directory store's documents, in its private area
/// (`.docfs/versions`). A save replaces a document's file with a new one; the replaced file is
/// linked in here first, so keeping it costs a directory entry, never a copy. A package's version
/// is a folder of links to the package's files as they were: unchanged members are shared with
/// the live package.
///
/// **A history belongs to a document, not to a path.** Each document's versions are in a folder
/// named by the document's persistent number (`ItemIdentities`, the `st_ino` the mount shows):
/// `versions/CD/0000000000ABCDCD/`. The folder's `document` note says where the document is, and
/// the index (path to folder) is read from the notes. So:
/// - a rename, of the document or of a folder above it, rewrites notes and moves no version;
/// - a document moved beside the mount keeps its history: its next save finds its number's folder
///   and takes the history along (the note is rewritten);
/// - a document that left its path beside the mount (found when the index is read: the item at
///   the note's path has another number, or none) is shown among the removed, under the owner of
///   its newest version; its number's folder stays, so a save of it, wherever it went, finds it;
/// - a save by rename, which gives the document the new file's number, renames its folder to that
///   number (`historyContinues`), as does a replacement the store's watch reads as a save;
/// - a document removed through the mount is no number's any more: its folder goes to a name no
///   number makes (`…-removed-TIME`), so a number the file system gives out again finds nothing.
///
/// A store that keeps no numbers (a file system without extended attributes, a PostgreSQL store's
/// mirror, whose database keys the versions) labels each history by the SHA-256 of the path it
/// began at (`versions/AB/ABCDEF…`, as every history of an earlier DocFS is); the notes and the
/// index find them all the same, and a store that keeps numbers gives such a history its
/// document's number at the document's next save.
///
/// Each version is named by its save time in UTC with the document's extension
/// (`20261125T140841.123456Z.md`): names sort by time, and programs open them by type. Only DocFS
/// makes names in here; each starts with a digit, so none is `document`.
public final class VersionArchive: Sendable {
    public let directory: String

    /// The documents with versions, and the names in each folder on the way to them: what a view of
    /// the archive lists by path. Read from the archive once, when first asked for, then kept up
    /// to date as versions are added, moved, and as documents lose their last one.
    public struct Index: Sendable {
        public var documents: Set<[UInt8]> = []
        /// The names in each folder, by the folder's bytes: by bytes too, so the NFC and NFD
        /// spellings of a name are two entries.
        public var children: [[UInt8]: Set<PathKey>] = [:]
        /// Each history's folder in the archive (`SHARD/KEY`), by its document's path: every
        /// folder with a note, also one whose versions all went (it may keep a removal's record).
        var folders: [[UInt8]: String] = [:]
        /// How many documents with versions are at or below each folder: a name leaves its folder's
        /// `children` when the last document below it goes.
        private var documentsBelow: [[UInt8]: Int] = [:]

        mutating func add(_ document: String) {
            guard documents.insert(Array(document.utf8)).inserted else { return }
            var parent = ""
            for component in StorePath.names(document) {
                children[Array(parent.utf8), default: []].insert(PathKey(component))
                parent = parent.isEmpty ? component : parent + "/" + component
                documentsBelow[Array(parent.utf8), default: 0] += 1
            }
        }

        /// `document` has no versions left: O(its depth), not a read of the archive. Its folder
        /// stays known.
        mutating func remove(_ document: String) {
            guard documents.remove(Array(document.utf8)) != nil else { return }
            var parent = ""
            for component in StorePath.names(document) {
                let path = parent.isEmpty ? component : parent + "/" + component
                let below = (documentsBelow[Array(path.utf8)] ?? 1) - 1
                documentsBelow[Array(path.utf8)] = below > 0 ? below : nil
                if below <= 0 { children[Array(parent.utf8)]?.remove(PathKey(component)) }
                parent = path
            }
        }

        /// `document`'s history is no longer at its path (moved, or gone).
        mutating func forget(_ document: String) {
            remove(document)
            folders[Array(document.utf8)] = nil
        }

        func folder(of document: String) -> String? { folders[Array(document.utf8)] }

        /// Every document with a folder at or below `path`, with its folder.
        func histories(atOrBelow path: String) -> [(document: String, folder: String)] {
            let bytes = Array(path.utf8)
            var found = folders[bytes].map { [(path, $0)] } ?? []
            // Below it only where it is a folder of the index: a file's rename costs no scan.
            guard children[bytes] != nil else { return found }
            let prefix = bytes + [UInt8(ascii: "/")]
            for (document, folder) in folders where document.starts(with: prefix) {
                found.append((String(decoding: document, as: UTF8.self), folder))
            }
            return found
        }
    }
    private let known = OrderedMutex<Index?>(.versionIndex, nil)
    /// Who could read each removed document, as its folder's attribute says, once read: the view
    /// asks for every entry it shows, and only DocFS writes them.
    private let removalRecords = OrderedMutex<[[UInt8]: Readers?]>(.leaf, [:])
    /// See `unreachableBits(at:status:)`, by the version file's inode number.
    private let recordedReach = OrderedMutex<[FileIdentity: (changed: timespec, bits: mode_t)]>(.leaf, [:])

    /// The number a history is kept under, and whether it travels with its item (it is in the
    /// item's attribute: DocFS gave it, or a save carried it). A file system's own number, not in
    /// the attribute, is the item's only while the item exists: a history found under it noted
    /// elsewhere may be another item's that had the number before, and is never taken along.
    public struct HistoryNumber: Sendable {
        public var value: UInt64
        public var travels: Bool
        public init(value: UInt64, travels: Bool) {
            self.value = value
            self.travels = travels
        }
    }

    /// What is at a store path now, from a store that keeps numbers (see the type's documentation).
    public enum LiveItem: Sendable {
        case none
        case numbered(HistoryNumber)
        /// The store is closed: nothing can be told.
        case unknown

        /// Whether this item has `number`; nil where nothing can be told.
        func has(_ number: UInt64) -> Bool? {
            switch self {
            case .none: false
            case .numbered(let live): live.value == number
            case .unknown: nil
            }
        }
    }
    public typealias LiveNumbers = @Sendable (String) -> LiveItem
    private let liveNumbers: OrderedMutex<LiveNumbers?> = OrderedMutex(.innermost, nil)

    public init(directory: String) {
        self.directory = directory
    }

    /// Keys the histories begun from now on by the numbers `numbers` tells (a store that keeps
    /// them calls this once, before any version is kept).
    public func keyByNumbers(_ numbers: @escaping LiveNumbers) {
        liveNumbers.withLock { $0 = numbers }
    }

    private var numbers: LiveNumbers? { liveNumbers.withLock { $0 } }

    /// The index of the archive (see `Index`). Built holding its lock, so a version added
    /// meanwhile waits and lands in it.
    public var index: Index {
        known.withLock { known in
            if let index = known { return index }
            let built = buildIndex()
            known = built
            return built
        }
    }

    /// Runs `body` with the index, read first if it is not yet, holding its lock.
    private func withIndex<T>(_ body: (inout Index) throws -> T) rethrows -> T {
        try known.withLock { known in
            var index = known ?? buildIndex()
            defer { known = index }
            return try body(&index)
        }
    }

    /// The folder holding the versions of the document at store path `document` (one that does
    /// not exist where it has none).
    public func folder(for document: String) -> String {
        withIndex { folder(for: document, in: &$0) }
    }

    /// `folder(for:)` in `index`, a copy of the index taken once (a view resolving a path).
    public func folder(for document: String, in index: Index) -> String {
        if let folder = index.folder(of: document) { return directory + "/" + folder }
        return directory + "/" + Self.labelFolder(for: document, taken: { _ in false })
    }

    private func folder(for document: String, in index: inout Index) -> String {
        if let folder = index.folder(of: document) { return directory + "/" + folder }
        return directory + "/" + freeLabelFolder(for: document)
    }

    /// `SHARD/KEY` of the history of the item numbered `number`.
    static func numberFolder(_ number: UInt64) -> String {
        let hex = String(number, radix: 16, uppercase: true)
        let key = String(repeating: "0", count: 16 - hex.count) + hex
        return String(key.suffix(2)) + "/" + key
    }

    /// The number whose history `folder` (`SHARD/KEY`) is; nil for a label or a removed one's.
    static func number(ofFolder folder: String) -> UInt64? {
        let key = StorePath.lastComponent(folder)
        guard key.utf8.count == 16 else { return nil }
        return UInt64(key, radix: 16)
    }

    /// Whether `folder` is labelled by a path (see the type's documentation): neither a number's
    /// nor a removed document's (`…-removed-TIME`, see `place`).
    static func isLabel(_ folder: String) -> Bool {
        number(ofFolder: folder) == nil && !isSetAside(folder)
    }

    /// Whether `folder` is a removed document's, set aside from its number (see `setAside`).
    static func isSetAside(_ folder: String) -> Bool { folder.contains(removedKeyMark) }

    private static let removedKeyMark = "-removed-"

    /// `SHARD/KEY` labelled by `document`'s path (see the type's documentation), with a suffix
    /// where `taken` says a label is another document's.
    private static func labelFolder(for document: String, taken: (String) -> Bool) -> String {
        let key = SHA256Hex.of(FileSystemPath.bytes(of: document))
        var folder = String(key.prefix(2)) + "/" + key
        var suffix = 1
        while taken(folder) {
            folder = String(key.prefix(2)) + "/" + key + "-" + String(suffix)
            suffix += 1
        }
        return folder
    }

    /// A label folder for `document` that no other document's history holds: one made by an
    /// earlier reading of the archive for it, or one that does not exist.
    private func freeLabelFolder(for document: String) -> String {
        Self.labelFolder(for: document) { folder in
            let path = directory + "/" + folder
            guard (try? FileStatus.of(path: path)) != nil else { return false }
            return Self.document(inFolder: path).map { !FileSystemPath.same($0, document) } ?? true
        }
    }

    // MARK: Keeping

    /// Makes `make(path)` at a name for a new version of `document` saved at `record`'s time: a
    /// name no version has yet (two saves in one microsecond are a microsecond apart here). The
    /// history's folder is made the first time. `number`: the document's, where the store keeps
    /// numbers and the version is of the document's own history (see `historyFolder`). Returns
    /// where it went, or nil when the item (`inode`) is kept already: a save tried again after a
    /// failure.
    func addVersion(
        of document: String, number: HistoryNumber? = nil, record: SaveRecord, inode: UInt64, _ make: (String) throws -> Void
    ) throws -> String? {
        let folder = number.map { historyFolder(of: document, number: $0) } ?? withIndex { index in
            let folder = self.folder(for: document, in: &index)
            index.folders[Array(document.utf8)] = relative(folder)
            return folder
        }
        let suffix = Self.extensionSuffix(of: document)
        // Clamped first: past the ends every name would be the same one, and the search below endless.
        let (seconds, overflow) = Int64(record.time.tv_sec).multipliedReportingOverflow(by: 1_000_000)
        var microseconds = VersionName.clamped(microseconds: overflow ? (seconds < 0 ? 0 : Int64.max) : seconds &+ Int64(record.time.tv_nsec / 1000))
        if microseconds == VersionName.clamped(microseconds: .max) { microseconds -= Self.nameAttempts }
        var madeFolder = false
        for _ in 0..<Self.nameAttempts {
            let path = folder + "/" + VersionName.time(microseconds: microseconds) + suffix
            do {
                // The common case costs one call: the folder exists and the name is free.
                try make(path)
                return path
            } catch let error as SystemCallError where error.errno == ENOENT && !madeFolder {
                try makeFolder(folder, for: document)
                madeFolder = true
            } catch let error as SystemCallError where error.errno == EEXIST {
                if let taken = try? FileStatus.of(path: path), taken.inode == inode, taken.kind == .regular { return nil }
                microseconds += 1
            }
        }
        throw SystemCallError(errno: EEXIST, operation: "keep a version (\(Self.nameAttempts) names of one microsecond each taken)", path: folder)
    }

    /// How many names, a microsecond apart, a version tries before it gives up.
    static let nameAttempts: Int64 = 10_000

    /// The folder of the history of `document`, the item numbered `number`: its number's folder.
    /// That folder noted elsewhere is taken along (its note rewritten) where the number travels
    /// with its item: the document moved beside the mount, or came back from among the removed
    /// (see `departed`); else it is another item's that had the number, and is set aside.
    /// The history the index lists at `document` under another key joins it where it is a
    /// label's (an earlier DocFS's, one begun without a number), or where `continuing` (the
    /// number the document had before a save through the mount gave it a new one). Another
    /// number's history there is that document's, which left the path beside the mount: shown
    /// among the removed, so a document now at the path starts with none.
    func historyFolder(of document: String, number: HistoryNumber, continuing: Bool = false) -> String {
        let own = Self.numberFolder(number.value)
        return withIndex { index in
            let listed = index.folder(of: document)
            let ownPath = directory + "/" + own
            if listed == own { return ownPath }
            // A save by rename does this each time: the history renamed whole to a number no
            // history has yet, one system call.
            if let listed, Self.isLabel(listed) || (continuing && Self.number(ofFolder: listed) != nil),
               (try? makingShard(of: ownPath, { try FileIO.rename(directory + "/" + listed, ownPath, flags: Self.renameNoReplace, movesFolder: true) })) != nil {
                index.folders[Array(document.utf8)] = own
                return ownPath
            }
            let noted = Self.document(inFolder: ownPath)
            if let noted, number.travels, carries(number, stillAt: noted, besides: document) {
                // Two items carry the number (a copy took DocFS's attribute along: `cp -a` as
                // root): the history is the one's still at its noted path. This one keeps its own,
                // labelled by its path.
                if let listed, Self.isLabel(listed) { return directory + "/" + listed }
                if let listed { departed(listed, from: document, in: &index) }
                let label = freeLabelFolder(for: document)
                index.folders[Array(document.utf8)] = label
                return directory + "/" + label
            }
            if let noted, !FileSystemPath.same(noted, document), !number.travels {
                let removed = Self.pathBeforeRemoval(noted) == nil ? departed(own, from: noted, in: &index) : noted
                setAside(own, listedAt: removed, in: &index)
            }
            if let listed {
                if Self.isLabel(listed) || (continuing && Self.number(ofFolder: listed) != nil) {
                    if join(listed, into: own) { index.forget(document) }
                } else {
                    departed(listed, from: document, in: &index)
                }
            }
            // Where the folder is not made yet, its note is written when it is (`makeFolder`).
            takeAlong(own, noted: noted ?? document, to: document, in: &index)
            forgetRemovalRecords()
            return ownPath
        }
    }

    /// Whether the item at `noted`, a path in the store other than `document`, has `number` too.
    private func carries(_ number: HistoryNumber, stillAt noted: String, besides document: String) -> Bool {
        guard let numbers, !FileSystemPath.same(noted, document), Self.pathBeforeRemoval(noted) == nil else { return false }
        return numbers(noted).has(number.value) == true
    }

    /// Renames the history in `folder` (`SHARD/KEY`, a number's) to a name no number makes: its
    /// number is another item's now. It stays listed at `listedAt`, where it is listed.
    @discardableResult
    private func setAside(_ folder: String, listedAt path: String?, in index: inout Index) -> String {
        // A trace is for the number's document, which is gone: nothing to keep.
        if Self.isTrace(directory + "/" + folder) {
            try? FileIO.removeItem(directory + "/" + folder)
            return folder
        }
        let aside = folder + Self.removedKeyMark + String(Self.nowNanoseconds(), radix: 16)
        guard (try? FileIO.rename(directory + "/" + folder, directory + "/" + aside, flags: Self.renameNoReplace)) != nil else { return folder }
        if let path, index.folder(of: path) == folder { index.folders[Array(path.utf8)] = aside }
        return aside
    }

    /// The history of `document` in the folder of number `previous` goes on under `number`: a save
    /// through the mount replaced the item numbered `previous` with one of this number (by rename,
    /// or apart from the file's other names), whether or not it kept a version (an empty file).
    public func historyContinues(at document: String, from previous: UInt64, to number: HistoryNumber) {
        guard withIndex({ $0.folder(of: document) }) == Self.numberFolder(previous) else { return }
        _ = historyFolder(of: document, number: number, continuing: true)
    }

    /// The item at `document`, which carried the number `previous` copied from another file, was
    /// given `number` instead (see `IdentityAttribute`). Where it is `previous`'s document (moved to
    /// another file system: the history is listed at its path, or noted where no item has the
    /// number now), the history goes on under `number`; a copy beside its original gets none.
    public func historyRenumbered(at document: String, from previous: UInt64, to number: HistoryNumber) {
        guard Self.document(inFolder: directory + "/" + Self.numberFolder(previous)) != nil else { return }
        _ = historyFolder(of: document, number: HistoryNumber(value: previous, travels: true))
        historyContinues(at: document, from: previous, to: number)
    }

    /// The history of `document` goes on under the number the item at its path has now: the
    /// store's watch read a replacement made beside the mount as a save. Nothing where the store
    /// keeps no numbers or the document has no history.
    public func historyContinues(at document: String) {
        guard let numbers, let listed = withIndex({ $0.folder(of: document) }), case .numbered(let number) = numbers(document),
              listed != Self.numberFolder(number.value)
        else { return }
        _ = historyFolder(of: document, number: number, continuing: true)
    }

    /// The store's watch saw `document` change beside the mount (after a replacement it read as a
    /// save, see `historyContinues(at:)`): the history listed there, or below it (a folder), stays
    /// only while the item there has its number (else it is shown among the removed, see
    /// `departed`), and the history of the number now there, where the number travels with its
    /// item and the history is noted elsewhere (not still carried there), comes along: the
    /// document was moved here.
    public func changedBeside(_ document: String) {
        guard let numbers else { return }
        let live = numbers(document)
        if case .unknown = live { return }
        withIndex { index in
            // A folder renamed or removed beside the mount: the watch reports its name only.
            // (Where its documents went, each one's next save finds; a folder made at the name
            // since is left to them too: any other event on a folder costs no scan.)
            let leftBelow: [(document: String, folder: String)] = if case .none = live { index.histories(atOrBelow: document) } else { [] }
            for (below, folder) in leftBelow where below.utf8.count > document.utf8.count {
                guard let number = Self.number(ofFolder: folder), numbers(below).has(number) == false else { continue }
                departed(folder, from: below, in: &index)
            }
            if let listed = index.folder(of: document), let number = Self.number(ofFolder: listed) {
                if case .numbered(let now) = live, now.value == number { return }
                departed(listed, from: document, in: &index)
            }
            guard case .numbered(let now) = live, now.travels else { return }
            let own = Self.numberFolder(now.value)
            guard let noted = Self.document(inFolder: directory + "/" + own), !FileSystemPath.same(noted, document),
                  !carries(now, stillAt: noted, besides: document)
            else { return }
            takeAlong(own, noted: noted, to: document, in: &index)
            forgetRemovalRecords()
        }
    }

    /// Lists the history in `own` (a number's, noted at `noted`) at `document`, where its document
    /// is now: every other path it is listed at forgets it.
    private func takeAlong(_ own: String, noted: String, to document: String, in index: inout Index) {
        let path = directory + "/" + own
        if !FileSystemPath.same(noted, document) {
            // Back from among the removed: the document's own again, with the versions it left in
            // a removal's history there.
            if Self.pathBeforeRemoval(noted) != nil {
                try? Paths.removeExtendedAttribute(path, name: Self.heldByAttribute)
                takeBackTraced(into: path, from: noted, in: &index)
            }
            try? writeNote(in: path, naming: document)
        }
        for (listedAt, folder) in index.folders where folder == own && listedAt != Array(document.utf8) {
            index.forget(String(decoding: listedAt, as: UTF8.self))
        }
        index.folders[Array(document.utf8)] = own
        if Self.holdsAVersion(path) { index.add(document) }
    }

    /// Moves the versions `folder`'s trace names back from the history listed at `removed` (where
    /// `departed` joined them), as far as they are still there; the trace goes.
    private func takeBackTraced(into folder: String, from removed: String, in index: inout Index) {
        guard let names = Self.trace(inFolder: folder) else { return }
        if let listed = index.folder(of: removed), directory + "/" + listed != folder {
            let source = directory + "/" + listed
            for name in names { _ = try? FileIO.rename(source + "/" + name, folder + "/" + name, flags: Self.renameNoReplace) }
            if !Self.holdsAVersion(source) { index.remove(removed) }
        }
        Paths.remove(folder + "/" + Self.traceName)
    }

    /// Forgets the index: the store's watch lost track of changes, and the next use reads the
    /// archive again (see `buildIndex`).
    public func forgetIndex() {
        known.withLock { $0 = nil }
        forgetRemovalRecords()
    }

    /// Moves the versions of the history in `folder` into the one in `target` (both `SHARD/KEY`):
    /// the folder itself where `target` is none yet, else each version (one whose name is taken
    /// there stays). `leavingTrace`: `folder` stays, emptied, with the names of the versions that
    /// went added to its trace (see `traceName`). Whether every version went (and, leaving a
    /// trace, it was written; else, `folder` is gone).
    @discardableResult
    private func join(_ folder: String, into target: String, leavingTrace: Bool = false) -> Bool {
        let from = directory + "/" + folder, to = directory + "/" + target
        if !leavingTrace {
            do {
                try makingShard(of: to) { try FileIO.rename(from, to, flags: Self.renameNoReplace, movesFolder: true) }
                return true
            } catch let error as SystemCallError where error.errno == EEXIST || error.errno == ENOTEMPTY {
                // `target` has versions of its own: each of these joins them.
            } catch {
                return false
            }
        }
        var moved: [String] = []
        for name in (try? FileIO.directoryEntries(from)) ?? [] where VersionName.savedTime(of: name) != nil {
            if (try? FileIO.rename(from + "/" + name, to + "/" + name, flags: Self.renameNoReplace)) != nil { moved.append(name) }
        }
        if leavingTrace {
            // Added to: an earlier join cut short (a name taken) left one.
            let earlier = Self.trace(inFolder: from) ?? []
            let names = earlier + moved.filter { !earlier.contains($0) }
            guard (try? Self.writeWhole(from + "/" + Self.traceName, Array(names.joined(separator: "\n").utf8))) != nil else { return false }
            return !Self.holdsAVersion(from)
        }
        guard !Self.holdsAVersion(from) else { return false }
        try? FileIO.removeItem(from)
        return true
    }

    /// The history in `folder`, noted at `document`, whose document left that path beside the
    /// mount (renamed, removed or replaced there while DocFS was not looking): shown among the
    /// removed, in the area of its newest version's owner, who alone may read it there (root
    /// aside). Its folder keeps its number: a save of the document where it went takes it back
    /// (where the history joined an earlier removal's, with the versions its trace names).
    /// `listed`: whether the index lists it at `document` (else whatever is listed there stays).
    /// Returns the path among the removed it is listed at.
    @discardableResult
    private func departed(_ folder: String, from document: String, listed: Bool = true, in index: inout Index) -> String {
        let path = directory + "/" + folder
        let newest = versions(inFolder: path, document: document, measuring: false).last
        let owner = newest?.status.userID ?? 0
        let removed = Self.removedPath(of: document, owner: owner)
        if listed { index.forget(document) }
        var target = folder
        if let existing = index.folder(of: removed), existing != folder {
            // The same owner's earlier removal at that path: one history. A number's folder stays,
            // with a trace of what went: its document, found again, takes its versions back.
            let number = Self.number(ofFolder: folder) != nil
            guard let shared = removalHistory(existing, at: removed, in: &index),
                  join(folder, into: shared, leavingTrace: number)
            else { return removed }
            if number { try? writeNote(in: path, naming: removed) }
            target = shared
        } else {
            // Listed there even where the note cannot be written: it is not the path's any more.
            try? writeNote(in: path, naming: removed)
            index.folders[Array(removed.utf8)] = folder
        }
        let targetPath = directory + "/" + target
        if Self.holdsAVersion(targetPath) { index.add(removed) }
        let readers = Readers(userID: owner, groupID: newest?.status.groupID ?? 0, permissions: 0o500)
        let narrowed = readersOfRemovedDocument(removed, in: targetPath).map { $0.removedAgain(as: readers, inAreaOf: owner) } ?? readers
        setReaders(narrowed, of: removed, in: targetPath)
        return removed
    }

    /// The folder of the history listed at `removed` (`existing`, `SHARD/KEY`), for another
    /// removed history to join: one no number makes. A departed number's folder (its document may
    /// come back, see `departed`) gives its versions to a new one first, keeping a trace of them,
    /// so that neither document, found again, takes the other's. Nil where that failed.
    private func removalHistory(_ existing: String, at removed: String, in index: inout Index) -> String? {
        guard Self.number(ofFolder: existing) != nil else { return existing }
        let shared = existing + Self.removedKeyMark + String(Self.nowNanoseconds(), radix: 16)
        let sharedPath = directory + "/" + shared
        guard (try? Paths.makeDirectory(sharedPath, mode: 0o700)) != nil, (try? writeNote(in: sharedPath, naming: removed)) != nil else { return nil }
        if let readers = readersOfRemovedDocument(removed, in: directory + "/" + existing) { setReaders(readers, of: removed, in: sharedPath) }
        guard join(existing, into: shared, leavingTrace: true) else { return nil }
        index.folders[Array(removed.utf8)] = shared
        return shared
    }

    /// The document's folder, with `document` in it naming the document.
    /// Returns false where the folder was there already.
    @discardableResult
    private func makeFolder(_ folder: String, for document: String) throws -> Bool {
        let made = try makingShard(of: folder) { () throws -> Bool in
            do { try Paths.makeDirectory(folder, mode: 0o700) } catch let error as SystemCallError where error.errno == EEXIST { return false }
            return true
        }
        try writeNote(in: folder, naming: document)
        known.withLock { index in index?.folders[Array(document.utf8)] = relative(folder) }
        return made
    }

    /// `SHARD/KEY` of a history's folder (a whole path in the archive).
    private func relative(_ folder: String) -> String { String(decoding: folder.utf8.dropFirst(directory.utf8.count + 1), as: UTF8.self) }

    /// Runs `body`, which makes something in `folder`'s shard; where the shard (or the archive) is
    /// not there yet, makes it and runs `body` again. There are 256 shards, so nearly every call
    /// finds its own: two `mkdir`s each time (EEXIST) were a ninth of an `rm`'s system calls.
    private func makingShard<T>(of folder: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SystemCallError where error.errno == ENOENT {
            try makeShard(of: folder)
            return try body()
        }
    }

    /// The archive and the shard a document's folder goes in (`versions/AB/`).
    private func makeShard(of folder: String) throws {
        let shard = String(folder[..<(folder.utf8.lastIndex(of: UInt8(ascii: "/")) ?? folder.endIndex)])
        for path in [directory, shard] {
            do { try Paths.makeDirectory(path, mode: 0o700) } catch let error as SystemCallError where error.errno == EEXIST {}
        }
    }

    /// `document` in a document's folder: the path of the document whose versions it holds.
    /// Written beside and renamed over, so a crash leaves the old note or the new, never none.
    private func writeNote(in folder: String, naming document: String) throws {
        try Self.writeWhole(folder + "/document", FileSystemPath.bytes(of: document))
    }

    /// Writes `bytes` as the file at `path`, beside and renamed over: never seen in part.
    private static func writeWhole(_ path: String, _ bytes: [UInt8]) throws {
        let written = path + ".new"
        // Made by this open, the file is regular by construction: no status to check, no
        // O_NONBLOCK to clear (`FileIO.open`); one a crash left there is written over.
        let descriptor: Int32
        do {
            descriptor = try FileIO.open(written, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600)
        } catch let error as SystemCallError where error.errno == EEXIST {
            descriptor = try FileIO.open(written, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
        }
        do {
            defer { FileIO.close(descriptor) }
            try FileIO.writeAll(descriptor, Data(bytes), path: written)
        }
        try FileIO.rename(written, path, flags: 0, movesFolder: false)
    }

    /// In a number's folder emptied into a removal's history (see `departed`): the names of the
    /// versions that went there, one a line, so the document, found again, takes them back.
    private static let traceName = "joined"

    /// Whether `folder` holds a trace and no version.
    private static func isTrace(_ folder: String) -> Bool {
        (try? FileStatus.of(path: folder + "/" + traceName)) != nil && !holdsAVersion(folder)
    }

    private static func trace(inFolder folder: String) -> [String]? {
        // `FileIO.open` opens regular files and folders only, without waiting (a FIFO here fails).
        guard let descriptor = try? FileIO.open(folder + "/" + traceName, O_RDONLY | O_NOFOLLOW) else { return nil }
        defer { FileIO.close(descriptor) }
        guard let data = try? FileIO.contents(of: descriptor, size: 16 * 1024 * 1024, mapping: false) else { return nil }
        // Only names a version has: the file is DocFS's, but the folder may have been tampered with.
        return data.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }.filter { VersionName.savedTime(of: $0) != nil && !$0.contains("/") }
    }

    /// Records a version kept of `document` at `location`.
    func added(_ document: String, at location: String) {
        StoreMetrics.versionsKept.increment()
        let folder = relative(String(location[..<(location.utf8.lastIndex(of: UInt8(ascii: "/")) ?? location.endIndex)]))
        known.withLock { index in
            index?.folders[Array(document.utf8)] = folder
            index?.add(document)
        }
    }

    /// Moves `built`, a version of `document` made whole elsewhere (a file or a folder that no
    /// document shares, fetched from a shared store), into the archive as saved at `record`.
    /// Returns where it went.
    public func adopt(_ built: String, as document: String, record: SaveRecord) throws -> String {
        Self.markArchived(at: built)
        // Never shown without what it keeps closed.
        do { try record.writeOrThrow(at: built) } catch { if record.unreachable != 0 { throw error } }
        guard let placed = try addVersion(of: document, record: record, inode: 0, { target in
            try FileIO.rename(built, target, flags: Self.renameNoReplace)
        }) else { throw SystemCallError(errno: EEXIST, operation: "rename", path: built) }
        added(document, at: placed)
        return placed
    }


    /// renameat2's RENAME_NOREPLACE: a version's name is never taken over.
    private static let renameNoReplace: UInt32 = 1

    /// Gives every file of a version made apart one archived link: its only name is the archive's.
    private static func markArchived(at path: String) {
        guard let status = try? FileStatus.of(path: path) else { return }
        switch status.kind {
        case .regular: ArchivedLinks.set(path, to: 1)
        case .directory: for name in (try? FileIO.directoryEntries(path)) ?? [] { markArchived(at: path + "/" + name) }
        default: break
        }
    }

    // MARK: Removed documents

    /// Where the history of a document removed through the mount goes: its old path under its
    /// owner's removal area, `.docfs/removed-UID/PATH` (`.docfs` at the root is DocFS's own, so no
    /// document has such a path), shown as `MOUNT/.versions/.docfs/removed-UID/PATH`. A new
    /// document at the old path starts with no history. The documents one owner removed at one
    /// path share one history; another owner's removal there goes to that owner's area, so nobody
    /// can narrow, let alone take, another's undo by making and removing a document of its name.
    public static func removedPath(of document: String, owner: uid_t) -> String {
        let area = removalArea(of: owner)
        return document.isEmpty ? area : area + "/" + document
    }

    /// `.docfs/removed-UID`: the removal area of `owner`'s documents.
    public static func removalArea(of owner: uid_t) -> String { DirectoryStore.privateAreaName + "/" + removalAreaPrefix + String(owner) }

    /// `removed`: the area in `.docfs` where an earlier DocFS put every owner's removed documents,
    /// one history a path. Still shown and restored from; nothing new goes there.
    private static let sharedRemovalArea = "removed"

    private static let removalAreaPrefix = "removed-"

    /// Whether `name`, a name in `.docfs`, is a removal area: the shared one, or `removed-UID` with
    /// the uid in decimal as `removalArea(of:)` spells it.
    public static func isRemovalArea(_ name: String) -> Bool {
        if name.utf8.elementsEqual(sharedRemovalArea.utf8) { return true }
        guard name.utf8.starts(with: removalAreaPrefix.utf8) else { return false }
        let digits = String(Substring(name.utf8.dropFirst(removalAreaPrefix.utf8.count)))
        return uid_t(digits).map { String($0) == digits } == true
    }

    /// The owner whose removal area `path` is in (`.docfs/removed-UID/…`); nil elsewhere, and in
    /// the shared area of an older DocFS.
    public static func removalAreaOwner(of path: String) -> uid_t? {
        let names = StorePath.names(path)
        guard names.count > 1, names[0] == DirectoryStore.privateAreaName, isRemovalArea(names[1]) else { return nil }
        return uid_t(names[1].dropFirst(removalAreaPrefix.count))
    }

    /// The path a view folder's documents had before they were removed: `notes` for
    /// `.docfs/removed-1000/notes`, the root for `.docfs` and for an area itself; nil outside the
    /// removal areas.
    public static func pathBeforeRemoval(_ folder: String) -> String? {
        let names = StorePath.names(folder)
        guard names.first == DirectoryStore.privateAreaName else { return nil }
        guard names.count > 1 else { return "" }
        guard isRemovalArea(names[1]) else { return nil }
        return names.dropFirst(2).joined(separator: "/")
    }

    /// The histories of documents removed at `path` (or of folders of them, below it), one for each
    /// removal area that holds any, in the order of `removalAreas(_:preferring:)`.
    public func removedPaths(of path: String, preferring user: uid_t?) -> [String] {
        let index = index
        let names = (index.children[Array(DirectoryStore.privateAreaName.utf8)] ?? []).map(\.path)
        return Self.removalAreas(names, preferring: user).map { $0 + (path.isEmpty ? "" : "/" + path) }.filter { removed in
            index.documents.contains(Array(removed.utf8)) || index.children[Array(removed.utf8)] != nil
        }
    }

    /// The removal areas among `names` (names in `.docfs`), as paths: `user`'s own first, then the
    /// shared area of an older DocFS (which may hold `user`'s removals from before), then the
    /// others by uid.
    public static func removalAreas(_ names: [String], preferring user: uid_t?) -> [String] {
        func rank(_ area: String) -> (Int, UInt64) {
            guard let uid = uid_t(area.dropFirst(removalAreaPrefix.count)) else { return (1, 0) }
            return uid == user ? (0, 0) : (2, UInt64(uid))
        }
        return names.filter(isRemovalArea).sorted { rank($0) < rank($1) }.map { DirectoryStore.privateAreaName + "/" + $0 }
    }

    // MARK: Folders that are gone

    /// Who may enter a folder of the view: an owner, a group and permissions (a removed folder's
    /// as they were, or who could read a removed document).
    public struct Readers: Sendable, Equatable {
        public var userID: uid_t
        public var groupID: gid_t
        public var permissions: mode_t

        public init(_ status: FileStatus) {
            userID = status.userID
            groupID = status.groupID
            permissions = status.permissions
        }

        public init(userID: uid_t, groupID: gid_t, permissions: mode_t) {
            self.userID = userID
            self.groupID = groupID
            self.permissions = permissions
        }

        /// Root alone may enter (mode 0500).
        public static let rootAlone = Readers(userID: 0, groupID: 0, permissions: 0o500)

        /// Those both let in: the same owner and group with the permissions both give; the same
        /// owner in two groups, the owner's and others' permissions both give (no group's); else
        /// root alone (mode 0500).
        public func narrowed(by other: Readers) -> Readers {
            var both = self
            if userID != other.userID { return .rootAlone }
            both.permissions &= other.permissions
            if groupID != other.groupID {
                both.groupID = 0
                both.permissions &= 0o707
            }
            return both
        }

        /// The record of a path in `owner`'s removal area removed again, where this was recorded
        /// before: narrowed by the same owner's removal (a `chmod 600` before the second `rm`
        /// closes both); replaced by the area owner's own removal of a folder recorded as someone
        /// else's (their private folder of that name keeps its names from everyone, as it did);
        /// and as it was after anyone else's, whose documents went to an area of their own (see
        /// `removedPath(of:owner:)`): a folder of someone else's made and removed at the path
        /// closes nobody's undo. `StoreQueries.recordRemoval` decides so too.
        public func removedAgain(as other: Readers, inAreaOf owner: uid_t?) -> Readers {
            if userID == other.userID { return narrowed(by: other) }
            return other.userID == owner ? other : self
        }

        /// "UID GID MODE" (the mode in octal), as kept.
        var text: String { "\(userID) \(groupID) \(String(permissions, radix: 8))" }

        init?(text bytes: [UInt8]) {
            let fields = String(decoding: bytes.prefix(64), as: UTF8.self).split(whereSeparator: \.isWhitespace)
            guard fields.count == 3, let user = uid_t(fields[0]), let group = gid_t(fields[1]), let mode = mode_t(fields[2], radix: 8) else { return nil }
            userID = user
            groupID = group
            permissions = mode & 0o7777
        }
    }

    /// Where what a removed folder was is kept: `versions/folders/KEY` (no shard is 7 letters long).
    private func removedFolderRecord(_ path: String) -> String { directory + "/folders/" + SHA256Hex.of(FileSystemPath.bytes(of: path)) }

    /// Records what `path`, a folder with documents with versions below it, was when it was
    /// removed, so the view shows it as it was: who could enter it may still reach their documents'
    /// versions (a user's own `rm -r` leaves their undo to them), and nobody else.
    /// A folder removed again under the same path by its owner keeps out whom either kept out
    /// (see `Readers.removedAgain(as:inAreaOf:)`).
    public func recordRemovedFolder(_ path: String, as status: FileStatus) {
        setRemovedFolder(path, removedFolder(path).map { $0.removedAgain(as: Readers(status), inAreaOf: Self.removalAreaOwner(of: path)) } ?? Readers(status))
    }

    /// Sets the record of the removed folder at `path` (one a shared store's database holds).
    public func setRemovedFolder(_ path: String, _ readers: Readers) {
        let record = removedFolderRecord(path)
        try? Paths.makeDirectory(directory, mode: 0o700)
        try? Paths.makeDirectory(directory + "/folders", mode: 0o700)
        guard let descriptor = try? FileIO.open(record, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600) else { return }
        defer { FileIO.close(descriptor) }
        try? FileIO.writeAll(descriptor, Data((readers.text + "\n").utf8), path: record)
    }

    /// What the folder at `path` was when it was removed, if it held documents with versions.
    public func removedFolder(_ path: String) -> Readers? {
        guard let descriptor = try? FileIO.open(removedFolderRecord(path), O_RDONLY | O_NOFOLLOW | O_NONBLOCK) else { return nil }
        defer { FileIO.close(descriptor) }
        guard let data = try? FileIO.contents(of: descriptor, size: 64, mapping: false) else { return nil }
        return Readers(text: [UInt8](data))
    }

    /// Records who could read `document` (`removed`: its status, its folder's, what folders above kept out) when it was removed
    /// through the mount, so its versions are never easier to reach than the document was: a
    /// `chmod 600` before the `rm`, a folder opened to others later (`chmod 755`), or one made anew
    /// under its name by someone else, opens none of them. Kept on the document's folder in the
    /// archive (one attribute, no file of its own), which goes where its history goes.
    /// A record only ever narrows: the versions under a name may be several documents' of one
    /// owner (one removed, another made there and removed), and each keeps out whom it kept out.
    /// `makingFolder`: a version is about to go in, so a history's folder not made yet is made
    /// first, with its record: no version of a removed document is in the archive unrecorded.
    public func recordRemovedDocument(_ document: String, as removed: RemovedDocument, makingFolder: Bool = false) {
        let readers = Self.readers(of: removed)
        let (folder, listed) = withIndex { index in (self.folder(for: document, in: &index), index.folder(of: document) != nil) }
        var earlier: Readers?
        if listed {
            earlier = readersOfRemovedDocument(document, in: folder)
        } else {
            guard makingFolder else { return }
            // Made now, it has no record. One found there unlisted (a label folder an earlier
            // reading of the archive left beside another, say) keeps out whom its record does:
            // read from the folder, not from what was cached while it was nobody's. So does one
            // whose note could not be written (a full disk): the version may still go in.
            if (try? makeFolder(folder, for: document)) != true {
                removalRecords.withLock { $0[Array(document.utf8)] = nil }
                earlier = readersOfRemovedDocument(document, in: folder)
            }
        }
        let narrowed = earlier.map { $0.removedAgain(as: readers, inAreaOf: Self.removalAreaOwner(of: document)) } ?? readers
        if narrowed != earlier { setReaders(narrowed, of: document, in: folder) }
    }

    /// Sets who could read `document` when it was removed (a record a shared store's database
    /// holds, which may come before its versions: `makingFolder` makes the document's folder).
    public func setReadersOfRemovedDocument(_ document: String, _ readers: Readers, makingFolder: Bool) {
        let folder = folder(for: document)
        if makingFolder, (try? FileStatus.of(path: folder)) == nil { _ = try? makeFolder(folder, for: document) }
        setReaders(readers, of: document, in: folder)
    }

    /// Who could read `document` when it was last removed, if it was: its owner and group, and r-x
    /// for each class that could.
    public func readersOfRemovedDocument(_ document: String) -> Readers? {
        if let known = removalRecords.withLock({ $0[Array(document.utf8)] }) { return known }
        return readersOfRemovedDocument(document, in: folder(for: document))
    }

    /// `setReadersOfRemovedDocument` on the history's folder, known.
    private func setReaders(_ readers: Readers, of document: String, in folder: String) {
        let text = Array(readers.text.utf8)
        removalRecords.withLock { records in
            let set = (try? text.withUnsafeBytes { value in
                try Paths.setExtendedAttribute(folder, name: Self.heldByAttribute, value: value, flags: 0)
            }) != nil
            records[Array(document.utf8)] = nil
            if set { records[Array(document.utf8)] = .some(readers) }
        }
    }

    /// `readersOfRemovedDocument` from the history's folder, known.
    private func readersOfRemovedDocument(_ document: String, in folder: String) -> Readers? {
        removalRecords.withLock { records in
            if let known = records[Array(document.utf8)] { return known }
            let read = (try? Paths.extendedAttribute(folder, name: Self.heldByAttribute)).flatMap(Readers.init(text:))
            records[Array(document.utf8)] = .some(read)
            return read
        }
    }

    /// Forgets what `removalRecords` read: histories moved or went.
    private func forgetRemovalRecords() { removalRecords.withLock { $0.removeAll() } }

    /// `readers(of:in:)` of a removed document, less the classes a folder further up kept out.
    public static func readers(of removed: RemovedDocument) -> Readers {
        var readers = readers(of: removed.status, in: removed.folder)
        if removed.unreachable & 0o070 != 0 { readers.permissions &= ~0o070 }
        if removed.unreachable & 0o007 != 0 { readers.permissions &= ~0o007 }
        return readers
    }

    /// The document's owner and group, and r-x for each class of them that could read it through
    /// its folder: that may search the folder and read the document. Supplementary groups are not
    /// known here: a class counts only by the owner and group both share, else as others.
    public static func readers(of document: FileStatus, in folder: FileStatus) -> Readers {
        func bits(_ mode: mode_t, _ shift: mode_t) -> mode_t { (mode >> shift) & 0o7 }
        let folderForOwner = folder.userID == document.userID ? bits(folder.permissions, 6)
            : folder.groupID == document.groupID ? bits(folder.permissions, 3) : bits(folder.permissions, 0)
        let folderForGroup = folder.groupID == document.groupID ? bits(folder.permissions, 3) : bits(folder.permissions, 0)
        func reads(_ documentBits: mode_t, _ folderBits: mode_t) -> mode_t { documentBits & 0o4 != 0 && folderBits & 0o1 != 0 ? 0o5 : 0 }
        var readers = Readers(document)
        readers.permissions = reads(bits(document.permissions, 6), folderForOwner) << 6
            | reads(bits(document.permissions, 3), folderForGroup) << 3
            | reads(bits(document.permissions, 0), bits(folder.permissions, 0))
        return readers
    }

    /// On a document's folder in the archive (the private area, which the mount never shows).
    private static let heldByAttribute = "user.docfs.removed-from"

    // MARK: Moving with their documents

    /// A document renamed, or a folder above documents: their histories go with them, so after
    /// `mv a.md b.md` the versions of `b.md` are `a.md`'s, and a new `a.md` starts with none. Only
    /// the notes change: no version moves. Where the new name has a history already (a document
    /// renamed over another), both are listed under it, in the moving document's folder (its
    /// number's). `exchanging`: RENAME_EXCHANGE, the two names' histories swap. A history moved
    /// into a removal area (a document removed through the mount) leaves its number's folder for
    /// one no number makes: the number is nobody's now, and a file system may give it out again.
    public func moveHistory(from source: String, to destination: String, exchanging: Bool) {
        withIndex { index in
            let moving = index.histories(atOrBelow: source)
            let coming = exchanging ? index.histories(atOrBelow: destination) : []
            for (document, _) in moving + coming { index.forget(document) }
            for (document, folder) in moving {
                place(folder, of: document, at: StorePath.replacingFolder(source, with: destination, in: document), in: &index)
            }
            for (document, folder) in coming {
                place(folder, of: document, at: StorePath.replacingFolder(destination, with: source, in: document), in: &index)
            }
            // Only a history that moved takes its record elsewhere (an rm of a document with no
            // history but the version it just kept moves nothing).
            if !moving.isEmpty || !coming.isEmpty { forgetRemovalRecords() }
        }
    }

    /// Notes the history in `folder` (which was `document`'s) at `target`.
    private func place(_ folder: String, of document: String, at target: String, in index: inout Index) {
        var folder = folder
        if let existing = index.folder(of: target), existing != folder {
            // Into a removal area, the history there keeps its folder, with its record of who
            // could read what was removed (this removal narrows it). Elsewhere the moving
            // document's folder stays: it is the number the document has.
            let (kept, joining) = Self.pathBeforeRemoval(target) != nil ? (existing, folder) : (folder, existing)
            guard join(joining, into: kept) else {
                // A version whose name is taken there (two saves in one microsecond) stays where
                // it was: listed there, unless the document was removed from there.
                guard Self.pathBeforeRemoval(target) == nil else { return }
                index.folders[Array(document.utf8)] = folder
                if Self.holdsAVersion(directory + "/" + folder) { index.add(document) }
                return
            }
            folder = kept
        }
        // The note first: a crash before the rename below leaves the history among the removed,
        // under a number no item gets again (it was carried or DocFS's own).
        let path = directory + "/" + folder
        try? writeNote(in: path, naming: target)
        if Self.pathBeforeRemoval(target) != nil, Self.number(ofFolder: folder) != nil { folder = setAside(folder, listedAt: nil, in: &index) }
        // Listed where it went even where its note could not be written (a full disk): a removed
        // document's history must never stay at the path it left. The next reading of the
        // archive finds its number gone from there (see `buildIndex`).
        index.folders[Array(target.utf8)] = folder
        if Self.holdsAVersion(directory + "/" + folder) { index.add(target) }
    }

    private static func nowNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(max(0, now.tv_sec)) &* 1_000_000_000 &+ UInt64(max(0, now.tv_nsec))
    }

    /// Whether any document's history is listed at `path` or below it.
    public func hasHistory(atOrBelow path: String) -> Bool { withIndex { !$0.histories(atOrBelow: path).isEmpty } }

    /// Moves one version to `document`'s history (a shared store's database moved it there):
    /// where it went, or nil where it could not (a name taken there).
    public func moveVersion(_ version: DocumentVersion, to document: String) -> String? {
        let location: String? = withIndex { index in
            let target = folder(for: document, in: &index)
            if (try? FileStatus.of(path: target)) == nil {
                guard (try? makingShard(of: target, { try Paths.makeDirectory(target, mode: 0o700) })) != nil,
                      (try? writeNote(in: target, naming: document)) != nil
                else { return nil }
            }
            index.folders[Array(document.utf8)] = relative(target)
            let location = target + "/" + version.name
            guard (try? FileIO.rename(version.location, location, flags: Self.renameNoReplace)) != nil else { return nil }
            index.add(document)
            let source = Self.parent(of: version.location)
            if !Self.holdsAVersion(source) {
                try? FileIO.removeItem(source)
                index.forget(version.document)
            }
            return location
        }
        forgetRemovalRecords()
        return location
    }

    private static func parent(of location: String) -> String {
        String(location[..<(location.utf8.lastIndex(of: UInt8(ascii: "/")) ?? location.endIndex)])
    }


    /// The version `location` is in (a version's file or folder, or a file inside a package's
    /// version) and the item's path inside it (empty for the version itself).
    public func version(containing location: String) -> (version: String, item: [UInt8])? {
        // By bytes: a member's name need not be UTF-8.
        let bytes = FileSystemPath.bytes(of: location), prefix = FileSystemPath.bytes(of: directory + "/")
        guard bytes.starts(with: prefix) else { return nil }
        let components = bytes.dropFirst(prefix.count).split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        // A shard, a document's folder, the version's name (all ASCII), then the item's path.
        guard components.count >= 3 else { return nil }
        let version = directory + "/" + components[0..<3].map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
        return (version, Array(components.dropFirst(3).joined(separator: [UInt8(ascii: "/")])))
    }

    // MARK: Reading

    /// The versions of the document at `document`, oldest first.
    /// `measuring`: with the space each takes, which walks a package's version whole (listings
    /// and lookups go without).
    public func versions(of document: String, measuring: Bool = true) -> [DocumentVersion] {
        versions(inFolder: folder(for: document), document: document, measuring: measuring)
    }

    /// The version of `document` named `name`, found by its name: one stat, not a listing.
    public func version(of document: String, named name: String) -> DocumentVersion? {
        version(named: name, inFolder: folder(for: document), document: document, measuring: false)
    }

    private func versions(inFolder folder: String, document: String, measuring: Bool = true) -> [DocumentVersion] {
        let names = (try? FileIO.directoryEntries(folder)) ?? []
        return names.sorted().compactMap { version(named: $0, inFolder: folder, document: document, measuring: measuring) }
    }

    /// The entry `name` of a document's folder, when it is a version.
    private func version(named name: String, inFolder folder: String, document: String, measuring: Bool) -> DocumentVersion? {
        let location = folder + "/" + name
        guard let time = VersionName.savedTime(of: name), let status = try? FileStatus.of(path: location) else { return nil }
        return DocumentVersion(
            document: document, name: name, location: location, savedAt: time, savedBy: SaveRecord.read(at: location)?.userID, status: status,
            exclusiveBytes: measuring ? Self.exclusiveBytes(at: location, status: status) : 0)
    }

    /// Every document that has versions, with its versions; in no particular order.
    /// `measuring` as for `versions(of:measuring:)`.
    public func allDocuments(measuring: Bool = true) -> [(document: String, versions: [DocumentVersion])] {
        let index = index
        return index.documents.compactMap { bytes in
            let document = String(decoding: bytes, as: UTF8.self)
            guard let folder = index.folder(of: document) else { return nil }
            let versions = versions(inFolder: directory + "/" + folder, document: document, measuring: measuring)
            return versions.isEmpty ? nil : (document, versions)
        }
    }

    /// The paths of every document with versions.
    public func documentPaths() -> [String] { index.documents.map { String(decoding: $0, as: UTF8.self) } }

    /// Who saved the version at `location` (one of `versions(of:)`'s), where DocFS saw it saved.
    public func savedBy(at location: String) -> uid_t? { SaveRecord.read(at: location)?.userID }

    /// The permission bits the version at `location` never gives (`SaveRecord.unreachable`).
    public func unreachableBits(at location: String) -> mode_t { SaveRecord.read(at: location)?.unreachable ?? 0 }

    /// `unreachableBits(at:)` of a version file of `status`, read once: every attribute reply for a
    /// version asks (`ls -l` of a document's versions folder, twice an entry), and a version's
    /// record changes only with its change time.
    public func unreachableBits(at location: String, status: FileStatus) -> mode_t {
        let changed = status.changeTime
        let file = FileIdentity(device: status.device, inode: status.inode)
        if let known = recordedReach.withLock({ $0[file] }), known.changed.tv_sec == changed.tv_sec, known.changed.tv_nsec == changed.tv_nsec {
            return known.bits
        }
        let record = SaveRecord.read(at: location)
        // Only a record that knows: one being written (a version just kept) is read again.
        guard let record, record.knowsReach else { return record?.unreachable ?? 0 }
        recordedReach.withLock { known in
            // Bounded: past this, started again (a version's bits are one read away).
            if known.count >= 65_536 { known.removeAll(keepingCapacity: true) }
            known[file] = (changed, record.unreachable)
        }
        return record.unreachable
    }

    private struct FileIdentity: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    /// Reads the index from the archive's notes. Two folders noted at one path (a move a crash
    /// cut short) are one history; a number's history whose document is no longer at its noted
    /// path is shown among the removed (`departed`), as is a removed document's set aside whose
    /// note still names the path it left. A history an exchange of an earlier DocFS
    /// parked when a crash came (a note beginning with NUL) is no document's: left be.
    private func buildIndex() -> Index {
        var index = Index()
        let numbers = numbers
        var numbered: [(document: String, folder: String)] = []
        var setAsideAtLivePaths: [(document: String, folder: String)] = []
        for (document, folder) in documentFolders() where !document.hasPrefix("\u{0}") {
            let path = directory + "/" + folder
            // What a departed number's history left behind (see `departed`): listed nowhere.
            if Self.isTrace(path) { continue }
            // Set aside, its document was removed: its note was to name the removal area, and
            // names the path it left only where that write failed (a full disk).
            if Self.isSetAside(folder), Self.pathBeforeRemoval(document) == nil {
                setAsideAtLivePaths.append((document, folder))
                continue
            }
            if let existing = index.folder(of: document) {
                if join(folder, into: existing) { continue }
            }
            index.folders[Array(document.utf8)] = folder
            if Self.holdsAVersion(path) { index.add(document) }
            if Self.pathBeforeRemoval(document) == nil, Self.number(ofFolder: folder) != nil { numbered.append((document, folder)) }
        }
        guard let numbers else { return index }
        // A store read without keying (read-only) writes nothing: they stay unlisted there.
        for (document, folder) in setAsideAtLivePaths { departed(folder, from: document, listed: false, in: &index) }
        for (document, folder) in numbered where index.folder(of: document) == folder {
            guard let number = Self.number(ofFolder: folder), numbers(document).has(number) == false else { continue }
            departed(folder, from: document, in: &index)
        }
        return index
    }

    /// Each history's folder in the archive (`SHARD/KEY`), with the path its note names.
    private func documentFolders() -> [(document: String, folder: String)] {
        var result: [(String, String)] = []
        for shard in (try? FileIO.directoryEntries(directory)) ?? [] where shard.utf8.count == 2 {
            for key in (try? FileIO.directoryEntries(directory + "/" + shard)) ?? [] {
                guard let document = Self.document(inFolder: directory + "/" + shard + "/" + key) else { continue }
                result.append((document, shard + "/" + key))
            }
        }
        return result
    }

    private static func document(inFolder folder: String) -> String? {
        guard let descriptor = try? FileIO.open(folder + "/document", O_RDONLY | O_NOFOLLOW) else { return nil }
        defer { FileIO.close(descriptor) }
        guard let data = try? FileIO.contents(of: descriptor, size: 64 * 1024, mapping: false), !data.isEmpty else { return nil }
        return FileSystemPath.string(fromBytes: [UInt8](data))
    }

    /// Removes one version. A package's version goes whole.
    public func remove(_ version: DocumentVersion) throws {
        Self.releaseLinks(at: version.location)
        try FileIO.removeItem(version.location)
        // Its document leaves the index with its last version. Looked at holding the index's
        // lock, which a version added meanwhile takes to enter it (see `added`).
        let folder = Self.parent(of: version.location)
        known.withLock { index in
            if !Self.holdsAVersion(folder) {
                index?.remove(version.document)
                forgetRemovalRecords()
            }
        }
    }

    /// Whether a document's folder holds any version.
    private static func holdsAVersion(_ folder: String) -> Bool {
        ((try? FileIO.directoryEntries(folder)) ?? []).contains { VersionName.savedTime(of: $0) != nil }
    }

    // MARK: Names

    /// `.md` for `notes/a.md`; empty for a name without one (or only a leading dot).
    static func extensionSuffix(of document: String) -> String {
        let name = document.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(document[document.utf8.index(after: $0)...]) } ?? document
        guard let dot = name.utf8.lastIndex(of: UInt8(ascii: ".")), dot != name.utf8.startIndex else { return "" }
        let suffix = String(name[dot...])
        // A version's name must stay a name: the time (23 bytes) and the suffix within 255.
        return suffix.utf8.count <= 200 ? suffix : ""
    }

    /// Lowers the archived-link count of every file of the version at `path`, before it goes.
    static func releaseLinks(at path: String) {
        guard let status = try? FileStatus.of(path: path) else { return }
        switch status.kind {
        case .regular:
            ArchivedLinks.adjust(path, by: -1)
        case .directory:
            for name in (try? FileIO.directoryEntries(path)) ?? [] { releaseLinks(at: path + "/" + name) }
        default:
            break
        }
    }

    /// The space only the archive holds for a version: its files that no document shares, each
    /// file's share of it where several versions hold one file (so the shares add up to the whole).
    static func exclusiveBytes(at path: String, status: FileStatus) -> Int64 {
        switch status.kind {
        case .regular:
            let archived = ArchivedLinks.count(of: path)
            return archived > 0 && status.linkCount <= archived ? status.blocks * 512 / Int64(archived) : 0
        case .directory:
            var total: Int64 = status.blocks * 512
            for name in (try? FileIO.directoryEntries(path)) ?? [] {
                guard let child = try? FileStatus.of(path: path + "/" + name) else { continue }
                total += exclusiveBytes(at: path + "/" + name, status: child)
            }
            return total
        default:
            return 0
        }
    }
}

/// One earlier version of a document, as the archive holds it.
public struct DocumentVersion: Sendable {
    /// The document's store path.
    public var document: String
    /// The version's name: its save time and the document's extension.
    public var name: String
    /// Where it is (a whole path in the store's private area).
    public var location: String
    public var savedAt: Date
    /// Who saved it; nil where DocFS did not see it saved (a change beside the mount).
    public var savedBy: uid_t?
    /// The version's own status: the mode and owner it had when it was replaced.
    public var status: FileStatus
    /// The space only the archive holds for it (files shared with the live document count nothing).
    public var exclusiveBytes: Int64

    public var isPackage: Bool { status.kind == .directory }
}
