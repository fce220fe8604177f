import CSystemShims
import FUSE
import Glibc
import Synchronization
import SystemSupport

/// The inodes the kernel knows, by number and by (parent, name). Numbers are assigned here, not
/// taken from the store, because a document's stored file is replaced by every save.
///
/// A record stays while the kernel holds a lookup on it, an open file, or a child record (a child's
/// path is found through its parent). Nothing here holds a file descriptor, so a tree of any size
/// costs one small record per inode the kernel holds; the `Node` with an inode's open-file state is
/// made only when the inode is opened or written (a walk that only looks names up makes none).
final class NodeTable: Sendable {
    /// A name in a directory; `FileName` compares and hashes bytes, so NFC and NFD spellings of
    /// one word are two names, as on Linux.
    private struct ChildKey: Hashable {
        var parent: Inode
        var name: FileName
    }

    /// 56 bytes: one per inode the kernel holds, so a million of them are a dictionary of this size.
    /// What only hard-linked files need lives in `links`.
    private struct Record {
        var node: Node?
        var parent: Inode
        /// The root's record has no name of its own; this one is never looked up.
        var name: FileName
        var lookupCount: UInt64 = 0
        var openCount: Int32 = 0
        var childRecords: Int32 = 0
        /// Removed from the store while the kernel still holds it (open, or not yet forgotten).
        var isDetached = false
    }

    /// A record's other names (hard links) and its stored file, when that has several links:
    /// other names of it join the record.
    private struct Links {
        var aliases = 0
        var file: StoredFileIdentity?
    }

    private struct State {
        var records: [Inode: Record] = [:]
        var byName: [ChildKey: Inode] = [:]
        var links: [Inode: Links] = [:]
        /// Records of stored files with several links, so every name of one is one inode, even
        /// after the kernel forgot them and looks the names up afresh.
        var byLinkedFile: [StoredFileIdentity: Inode] = [:]
        var nextInode: Inode = .root + 1
        /// Inodes a name moved off while they had cached readers (`supersede`), by that name: an
        /// append committed under the name extends their version too (`tail -f` follows it).
        var leftBehind: [ChildKey: [WeakNode]] = [:]
        /// Names where a writer met readers reading through the page cache since no handle of the
        /// name's inode was last open (see `isContended`), with the threads sent to look the name
        /// up again that have not come back yet; and each such thread's name.
        var contended: [ChildKey: Set<pid_t>] = [:]
        var expectedAt: [pid_t: ChildKey] = [:]
    }

    private let state: OrderedMutex<State>

    init() {
        var initial = State()
        var root = Record(node: Node(inode: .root), parent: .root, name: FileName(validating: "(root)"))
        root.lookupCount = 1
        initial.records[.root] = root
        state = OrderedMutex(.nodeTable, initial)
    }

    var count: Int { state.withLock { $0.records.count } }

    /// The inode's node, made on first need; nil for an inode the table does not know.
    func node(_ inode: Inode) -> Node? {
        state.withLock { state in
            guard var record = state.records[inode] else { return nil }
            if let node = record.node { return node }
            let node = Node(inode: inode)
            record.node = node
            state.records[inode] = record
            return node
        }
    }

    /// The inode's node if it has one (it has open-file state only then).
    func existingNode(_ inode: Inode) -> Node? { state.withLock { $0.records[inode]?.node } }

    /// Whether the table knows the inode.
    func contains(_ inode: Inode) -> Bool { state.withLock { $0.records[inode] != nil } }

    /// The store path of a live inode; nil for unknown and detached ones.
    func path(of inode: Inode) -> String? {
        state.withLock { state in Self.path(of: inode, in: state) }
    }

    /// The folder holding a live inode (the root's is the root).
    func parent(of inode: Inode) -> Inode? {
        state.withLock { state in
            guard let record = state.records[inode], !record.isDetached else { return nil }
            return record.parent
        }
    }

    /// Counts one more lookup of a known inode (the kernel got an entry for it); false when the
    /// table does not know it.
    func countLookup(_ inode: Inode) -> Bool {
        state.withLock { state in
            guard state.records[inode] != nil else { return false }
            state.records[inode]?.lookupCount += 1
            return true
        }
    }

    func name(of inode: Inode) -> FileName? { state.withLock { $0.records[inode]?.name } }


    /// Where a detached inode was last named (a rename replaced it, or it was removed), while its
    /// parent is still known.
    func formerName(of inode: Inode) -> (parent: Inode, name: FileName)? {
        state.withLock { state in
            guard let record = state.records[inode], record.isDetached, state.records[record.parent] != nil else { return nil }
            return (record.parent, record.name)
        }
    }

    private static func path(of inode: Inode, in state: State) -> String? {
        var components: [String] = []
        var current = inode
        while current != .root {
            guard let record = state.records[current], !record.isDetached else { return nil }
            components.append(record.name.string)
            current = record.parent
        }
        return components.reversed().joined(separator: "/")
    }

    /// The inode for `name` in `parent`, made if new; counts one lookup when `counting`.
    /// `linkedFile` identifies a stored file with several links: a name of a file that already has
    /// a record becomes another name of that inode, when `identity(at:)` says that record's stored
    /// file still is that file. A record's file is replaced by a save, the file system then gives
    /// its number to a new file, and a file has several links for a moment while a package is
    /// cloned: without that check, two unrelated names became one inode, sharing one stage.
    /// `status`: the item's, as just taken.
    func child(
        parent: Inode, name: FileName, counting: Bool, status: FileStatus? = nil,
        identity: (_ at: String) -> StoredFileIdentity? = { _ in nil }
    ) -> Inode {
        let linkedFile = status.flatMap(StoredFileIdentity.init)
        return state.withLock { state in
            let key = ChildKey(parent: parent, name: name)
            if let inode = state.byName[key], var record = state.records[inode] {
                if counting { record.lookupCount += 1 }
                state.records[inode] = record
                return inode
            }
            if let linkedFile, let inode = state.byLinkedFile[linkedFile], var record = state.records[inode], !record.isDetached {
                if let path = Self.path(of: inode, in: state), identity(path) == linkedFile {
                    state.links[inode, default: Links()].aliases += 1
                    if counting { record.lookupCount += 1 }
                    state.records[inode] = record
                    state.byName[key] = inode
                    return inode
                }
                // That record's file is another now: the identity is free for this name.
                state.byLinkedFile[linkedFile] = nil
                if state.links[inode]?.file == linkedFile { state.links[inode]?.file = nil }
            }
            let inode = state.nextInode
            state.nextInode += 1
            var record = Record(node: nil, parent: parent, name: name)
            if counting { record.lookupCount = 1 }
            state.records[inode] = record
            state.byName[key] = inode
            if let linkedFile {
                state.links[inode, default: Links()].file = linkedFile
                state.byLinkedFile[linkedFile] = inode
            }
            state.records[parent]?.childRecords += 1
            return inode
        }
    }

    /// The known inode at a store path, following known names from the root.
    func existingInode(atPath path: String) -> Inode? {
        var current = Inode.root
        for component in StorePath.names(path) {
            guard let name = try? FileName(component), let next = existingChild(parent: current, name: name) else { return nil }
            current = next
        }
        return current
    }

    /// Every path of a live inode: its own, and its other hard links' (looked for only where it
    /// has some).
    func paths(of inode: Inode) -> [String] {
        state.withLock { state in
            guard let own = Self.path(of: inode, in: state) else { return [] }
            guard let links = state.links[inode], links.aliases > 0 else { return [own] }
            let others = state.byName.compactMap { key, value -> String? in
                guard value == inode, let folder = Self.path(of: key.parent, in: state) else { return nil }
                return StorePath.join(folder, key.name)
            }
            return [own] + others.filter { !FileSystemPath.same($0, own) }
        }
    }

    /// Every name the table knows: (parent, name, inode).
    func allNames() -> [(Inode, FileName, Inode)] {
        state.withLock { state in state.byName.map { ($0.key.parent, $0.key.name, $0.value) } }
    }

    /// The known inode for `name` in `parent`, without counting a lookup.
    func existingChild(parent: Inode, name: FileName) -> Inode? {
        state.withLock { $0.byName[ChildKey(parent: parent, name: name)] }
    }

    func forget(_ inode: Inode, count: UInt64) {
        let shrank = state.withLock { state in
            guard inode != .root, var record = state.records[inode] else { return false }
            record.lookupCount -= min(count, record.lookupCount)
            state.records[inode] = record
            Self.removeIfUnused(inode, in: &state)
            return Self.shrinkIfMostlyEmpty(&state)
        }
        // The freed tables are in the heap; give the pages back to the system.
        if shrank { _ = docfs_malloc_trim() }
    }

    /// Dictionaries never shrink as they empty: once the kernel has forgotten most of what a big
    /// walk made it hold, the tables are rebuilt at the size they need now (a copy of what is
    /// left, rare: it takes seven in eight records gone since the last rebuild).
    private static func shrinkIfMostlyEmpty(_ state: inout State) -> Bool {
        guard state.records.capacity >= 1 << 14, state.records.count * 8 < state.records.capacity else { return false }
        var records = [Inode: Record](minimumCapacity: state.records.count)
        for (inode, record) in state.records { records[inode] = record }
        var byName = [ChildKey: Inode](minimumCapacity: state.byName.count)
        for (key, inode) in state.byName { byName[key] = inode }
        state.records = records
        state.byName = byName
        return true
    }

    func opened(_ inode: Inode) {
        state.withLock { $0.records[inode]?.openCount += 1 }
    }

    /// Whether readers of `inode` bypass the page cache because its name is contended: a writer
    /// was moved off cached readers there (`supersede`), and the kernel repeats such a writer's
    /// request once, from the same thread, through whatever inode the name leads to then. Readers
    /// that had made that inode theirs by then would send it on a second time, and that ESTALE
    /// reaches its program. So the name stays contended until every writer sent back has come
    /// back, and then until no handle of the inode holding the name is open (`settle`). Kept by
    /// name, not by inode: the inode holding it changes with every save by rename, and the kernel
    /// forgets one as it revalidates the name. A writer that never comes back (killed between its
    /// ESTALE and its retry) leaves the name's readers bypassing the cache: slower, never wrong.
    func isContended(_ inode: Inode) -> Bool {
        state.withLock { state in
            guard !state.contended.isEmpty, let record = state.records[inode], !record.isDetached else { return false }
            return state.contended[ChildKey(parent: record.parent, name: record.name)] != nil
        }
    }

    /// `thread` was answered ESTALE for `node` and will look its name up again: the name the node
    /// has or last had. Its record may be gone already, the kernel's lookups of it counted down,
    /// while a request of its is on the way: then the node remembers the name.
    /// Returns the inode the name leads to now, if any.
    func expectWriter(_ thread: pid_t, backAt node: Node) -> Inode? {
        state.withLock { state in
            guard let name = state.records[node.inode].map({ (parent: $0.parent, name: $0.name) }) ?? node.lastName.withLock({ $0 }),
                  state.records[name.parent] != nil
            else { return nil }
            let key = ChildKey(parent: name.parent, name: name.name)
            Self.expect(thread, at: key, in: &state)
            return state.byName[key]
        }
    }

    private static func expect(_ thread: pid_t, at key: ChildKey, in state: inout State) {
        arrived(thread, in: &state)
        state.contended[key, default: []].insert(thread)
        state.expectedAt[thread] = key
    }

    /// A writer's thread made a request for writing (an open, a truncation by name): it is
    /// expected nowhere now, wherever its retry led.
    func writerArrived(_ thread: pid_t) {
        state.withLock { state in
            guard !state.expectedAt.isEmpty else { return }
            Self.arrived(thread, in: &state)
        }
    }

    private static func arrived(_ thread: pid_t, in state: inout State) {
        guard let key = state.expectedAt.removeValue(forKey: thread) else { return }
        state.contended[key]?.remove(thread)
    }

    /// No handle of `inode` is open: its name is at rest, unless a writer is still expected there.
    func settle(_ inode: Inode) {
        state.withLock { state in
            guard !state.contended.isEmpty, let record = state.records[inode], !record.isDetached else { return }
            let key = ChildKey(parent: record.parent, name: record.name)
            if state.contended[key]?.isEmpty == true { state.contended[key] = nil }
        }
    }

    /// Returns the number of handles still open.
    @discardableResult
    func closed(_ inode: Inode) -> Int {
        state.withLock { state in
            guard var record = state.records[inode] else { return 0 }
            record.openCount = max(0, record.openCount - 1)
            state.records[inode] = record
            let remaining = Int(record.openCount)
            Self.removeIfUnused(inode, in: &state)
            return remaining
        }
    }

    /// A hard link: `name` in `parent` is another name of `inode`. Counts one lookup.
    func addName(_ inode: Inode, parent: Inode, name: FileName, linkedFile: StoredFileIdentity?) -> Inode? {
        state.withLock { state in
            guard var record = state.records[inode] else { return nil }
            let key = ChildKey(parent: parent, name: name)
            if let previous = state.byName[key], previous != inode { Self.detach(key, of: previous, in: &state) }
            state.byName[key] = inode
            state.links[inode, default: Links()].aliases += 1
            record.lookupCount += 1
            if let linkedFile {
                state.links[inode, default: Links()].file = linkedFile
                state.byLinkedFile[linkedFile] = inode
            }
            state.records[inode] = record
            return inode
        }
    }

    /// `name` in `parent` is gone from the store (unlink, rmdir, replaced by a rename).
    func detach(parent: Inode, name: FileName) {
        state.withLock { state in
            let key = ChildKey(parent: parent, name: name)
            guard let inode = state.byName[key] else { return }
            Self.detach(key, of: inode, in: &state)
        }
    }

    /// Removes one name of `inode`; the inode is detached when it was the last.
    private static func detach(_ key: ChildKey, of inode: Inode, in state: inout State) {
        state.byName[key] = nil
        guard var record = state.records[inode] else { return }
        if let links = state.links[inode], links.aliases > 0 {
            state.links[inode]?.aliases -= 1
            if record.parent == key.parent && record.name == key.name,
               let other = state.byName.first(where: { $0.value == inode })?.key
            {
                // The primary name went; another link carries the inode on.
                state.records[record.parent]?.childRecords -= 1
                record.parent = other.parent
                record.name = other.name
                state.records[other.parent]?.childRecords += 1
            }
            state.records[inode] = record
            return
        }
        record.isDetached = true
        state.records[inode] = record
        removeIfUnused(inode, in: &state)
    }

    /// Detaches `inode`, held by `node`'s cached readers, from its name, as a rename over the name
    /// would: the kernel's next lookup of the name gets another inode, while whoever holds this one
    /// keeps it. `writer`: the thread whose request is answered ESTALE for it, expected back at the
    /// name (see `isContended`). Nil, changing nothing, for the root, a detached inode, or one
    /// whose stored file has other names (hard links).
    func supersede(_ node: Node, writer: pid_t?) -> (parent: Inode, name: FileName)? {
        let inode = node.inode
        return state.withLock { state in
            guard inode != .root, var record = state.records[inode], !record.isDetached, state.links[inode] == nil else { return nil }
            let key = ChildKey(parent: record.parent, name: record.name)
            guard state.byName[key] == inode else { return nil }
            record.isDetached = true
            state.records[inode] = record
            state.byName[key] = nil
            state.leftBehind[key, default: []].removeAll { $0.node == nil }
            state.leftBehind[key, default: []].append(WeakNode(node: node))
            if let writer { Self.expect(writer, at: key, in: &state) }
            return (key.parent, key.name)
        }
    }

    /// The nodes that `inode`'s name moved off and that still exist (see `leftBehind`).
    func leftBehind(by inode: Inode) -> [Node] {
        state.withLock { state in
            guard let record = state.records[inode], !record.isDetached else { return [] }
            let key = ChildKey(parent: record.parent, name: record.name)
            guard var known = state.leftBehind[key] else { return [] }
            known.removeAll { $0.node == nil }
            state.leftBehind[key] = known.isEmpty ? nil : known
            return known.compactMap(\.node)
        }
    }

    /// A rename in the store: the moved inode keeps its number; one it replaced is detached.
    func move(parent: Inode, name: FileName, to newParent: Inode, newName: FileName) {
        state.withLock { state in
            let newKey = ChildKey(parent: newParent, name: newName)
            if let replaced = state.byName[newKey] { Self.detach(newKey, of: replaced, in: &state) }
            guard let inode = state.byName.removeValue(forKey: ChildKey(parent: parent, name: name)),
                  var record = state.records[inode]
            else { return }
            state.records[record.parent]?.childRecords -= 1
            record.parent = newParent
            record.name = newName
            state.records[inode] = record
            state.records[newParent]?.childRecords += 1
            state.byName[newKey] = inode
        }
    }

    /// RENAME_EXCHANGE: the two names swap inodes.
    func exchange(parent: Inode, name: FileName, with otherParent: Inode, otherName: FileName) {
        state.withLock { state in
            let first = state.byName.removeValue(forKey: ChildKey(parent: parent, name: name))
            let second = state.byName.removeValue(forKey: ChildKey(parent: otherParent, name: otherName))
            for (inode, newParent, newName) in [(first, otherParent, otherName), (second, parent, name)] {
                guard let inode, var record = state.records[inode] else { continue }
                state.records[record.parent]?.childRecords -= 1
                record.parent = newParent
                record.name = newName
                state.records[inode] = record
                state.records[newParent]?.childRecords += 1
                state.byName[ChildKey(parent: newParent, name: newName)] = inode
            }
        }
    }

    private static func removeIfUnused(_ inode: Inode, in state: inout State) {
        var current = inode
        while current != .root, let record = state.records[current],
              record.lookupCount == 0, record.openCount == 0, record.childRecords == 0
        {
            state.records[current] = nil
            record.node?.lastName.withLock { $0 = (record.parent, record.name) }
            let key = ChildKey(parent: record.parent, name: record.name)
            if state.byName[key] == current {
                state.byName[key] = nil
                // Forgotten with nothing open: the name is at rest (see `settle`), unless a writer is
                // still expected there (the kernel forgets the name's inode as a retry revalidates
                // the name: the expectation must outlive it).
                if state.contended[key]?.isEmpty == true { state.contended[key] = nil }
            }
            if record.isDetached, let left = state.leftBehind[key] {
                let kept = left.filter { $0.node.map { $0.inode != current } ?? false }
                state.leftBehind[key] = kept.isEmpty ? nil : kept
            }
            if let links = state.links.removeValue(forKey: current) {
                if links.aliases > 0 { state.byName = state.byName.filter { $0.value != current } }
                if let file = links.file, state.byLinkedFile[file] == current { state.byLinkedFile[file] = nil }
            }
            state.records[record.parent]?.childRecords -= 1
            current = record.parent
        }
    }
}

/// A stored file by its device and inode number.
struct StoredFileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64

    /// The identity of a stored item that has several names, nil for one with a single name (and for
    /// directories, whose link count counts their subdirectories).
    init?(_ status: FileStatus) {
        guard status.linkCount > 1, status.kind != .directory else { return nil }
        device = status.device
        inode = status.inode
    }
}
