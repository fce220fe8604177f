import CSystemShims
import FUSE
import Glibc
import Synchronization
import SystemSupport

/// The inodes the kernel knows, by number, by (parent, name), and by the number of the item each
/// stands for (`FileStatus.identity`, the one the mount shows as `st_ino`: the store's, kept across
/// saves, remounts and renames). Inode numbers are assigned here, not taken from the store: a
/// writer may move a name off cached readers to a new inode (`supersede`), so one item can have two
/// inodes for a while. An item renamed beside DocFS keeps its inode at the new name (`child`,
/// `follow`). Each name of a file with several links (hard links) is an inode of its own, showing
/// the one number: the kernel writes to an inode, never to a name, and a save through a name must
/// land at that name (it ends the link). A change through one name tells the kernel the others'
/// attributes and content changed (`otherNames`).
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
    /// What only hard-linked files need lives in `linked`.
    private struct Record {
        var node: Node?
        var parent: Inode
        /// The root's record has no name of its own; this one is never looked up.
        var name: FileName
        /// The item's number in the store (its identity: `FileStatus.identity`), as last seen at its
        /// name; 0 where none was seen.
        var identity: UInt64 = 0
        /// The kernel's lookups not yet forgotten. 32 bits keep the record at 56 bytes (at 64 a walk
        /// of many files left the daemon holding more memory once forgotten); a count that reaches
        /// the top stays there, and the record with it, rather than go while the kernel holds it.
        var lookupCount: UInt32 = 0
        var openCount: Int32 = 0
        var childRecords: Int32 = 0
        /// Removed from the store while the kernel still holds it (open, or not yet forgotten).
        var isDetached = false
    }

    /// Counts one lookup of `inode` (see `Record.lookupCount`).
    private static func countLookup(_ inode: Inode, in state: inout State) {
        guard let count = state.records[inode]?.lookupCount, count < .max else { return }
        state.records[inode]?.lookupCount = count + 1
    }

    private struct State {
        var records: [Inode: Record] = [:]
        var byName: [ChildKey: Inode] = [:]
        /// The live record of an item number, for the records that must be found by it: a folder's
        /// (what is below it follows it), a file's with several links, and one with open-file state
        /// (what is open follows the item). A record whose item another program renamed is found at
        /// the new name (see `child`). Kept to those, a walk of many files adds nothing here.
        var byIdentity: [UInt64: Inode] = [:]
        /// The records of files seen with several links, by item number: one for each name.
        var linked: [UInt64: Set<Inode>] = [:]
        var nextInode: Inode = .root + 1
        /// Inodes a name moved off while they had cached readers (`supersede`), by that name: an
        /// append committed under the name extends their version too (`tail -f` follows it).
        var leftBehind: [ChildKey: [WeakNode]] = [:]
        /// Names where a writer met readers reading through the page cache since no handle of the
        /// name's inode was last open (see `keepsReadersOffCache`), with the threads sent to look
        /// the name up again that have not come back yet; and each such thread's name.
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
            // What is open through it follows the item from now on (see `byIdentity`): among the
            // names of a linked file, the one opened (a sibling without open-file state only stands
            // for the number).
            if !record.isDetached, record.identity != 0,
               Self.liveRecord(numbered: record.identity, in: state).map({ state.records[$0]?.node == nil && state.linked[record.identity]?.contains($0) == true }) ?? true
            {
                state.byIdentity[record.identity] = inode
            }
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
            Self.countLookup(inode, in: &state)
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

    /// How an item found at a name the table does not hold relates to the live record that has its
    /// number, at that record's path (`NodeTable.child`).
    enum Kinship {
        /// The same stored file (a hard link): the name gets a record of its own, of the same number.
        case anotherName
        /// The same item, gone from the record's name: renamed beside DocFS (by another program in
        /// the store, or by another mount of a PostgreSQL store). The record moves to the name, so
        /// the kernel's inode, and what is open through it, follows the item, as on a local file
        /// system.
        case moved
        /// Another item: the name gets a record of its own.
        case unrelated
    }

    /// The inode for `name` in `parent`, made if new; counts one lookup when `counting`. `status`:
    /// the item's, as just taken. An item whose number a live record at another name has is that
    /// record's item, moved, when `kinship` says so, asked with no lock held (it looks at the store):
    /// an item renamed beside DocFS keeps its inode.
    func child(
        parent: Inode, name: FileName, counting: Bool, status: FileStatus? = nil,
        kinship: (_ record: Inode, _ path: String) -> Kinship = { _, _ in .unrelated }
    ) -> Inode {
        // Never nil: a name with no record of its item gets one.
        resolve(ChildKey(parent: parent, name: name), counting: counting, status: status, creating: true, kinship: kinship) ?? .root
    }

    /// An item that appeared at `name` in `parent` beside DocFS (reported by the store's watch or
    /// change feed, with no lookup of the name yet): when `kinship` says it is a live record's item,
    /// moved, that record moves to the name, so a write through it lands there. Returns the record
    /// moved; makes none.
    func follow(parent: Inode, name: FileName, status: FileStatus, kinship: (_ record: Inode, _ path: String) -> Kinship) -> (inode: Inode, from: (parent: Inode, name: FileName))? {
        let key = ChildKey(parent: parent, name: name)
        let before = state.withLock { state -> (Inode, Record)? in
            guard state.byName[key] == nil, let inode = Self.liveRecord(numbered: status.identity, in: state), let record = state.records[inode] else { return nil }
            return (inode, record)
        }
        guard let (inode, record) = before, resolve(key, counting: false, status: status, creating: false, kinship: kinship) == inode else { return nil }
        return (inode, (record.parent, record.name))
    }

    private func resolve(
        _ key: ChildKey, counting: Bool, status: FileStatus?, creating: Bool, kinship: (_ record: Inode, _ path: String) -> Kinship
    ) -> Inode? {
        let found = state.withLock { state -> (inode: Inode?, elsewhere: String?) in
            if let inode = Self.known(key, counting: counting, in: &state) { return (inode, nil) }
            if let status, let other = Self.liveRecord(numbered: status.identity, in: state), let path = Self.path(of: other, in: state) {
                return (other, path)
            }
            return (creating ? Self.makeRecord(key, status: status, counting: counting, in: &state) : nil, nil)
        }
        guard let elsewhere = found.elsewhere, let other = found.inode else { return found.inode }
        let relation = kinship(other, elsewhere)
        return state.withLock { state in
            // Another request may have placed the name meanwhile, or moved the record.
            if let inode = Self.known(key, counting: counting, in: &state) { return inode }
            let unchanged = Self.liveRecord(numbered: status?.identity, in: state) == other && Self.path(of: other, in: state).map { FileSystemPath.same($0, elsewhere) } == true
            switch relation {
            case .anotherName where creating:
                // Linked beside DocFS since the record was made: both are names of one file now.
                if unchanged, let identity = status?.identity, state.records[other]?.identity == identity {
                    state.linked[identity, default: []].insert(other)
                }
                return Self.makeRecord(key, status: status, counting: counting, in: &state)
            case .moved where unchanged && Self.path(of: key.parent, in: state) != nil && !Self.isAncestor(other, of: key.parent, in: state):
                Self.rename(other, to: key, in: &state)
                if counting { Self.countLookup(other, in: &state) }
                return other
            default:
                return creating ? Self.makeRecord(key, status: status, counting: counting, in: &state) : nil
            }
        }
    }

    /// The record at `key`, counted. Its number stays the one it was made with, whatever is at the
    /// name now: a name is not the item, and only the item's own number may bring the record to a
    /// new name.
    private static func known(_ key: ChildKey, counting: Bool, in state: inout State) -> Inode? {
        guard let inode = state.byName[key], state.records[inode] != nil else { return nil }
        if counting { countLookup(inode, in: &state) }
        return inode
    }

    private static func liveRecord(numbered identity: UInt64?, in state: State) -> Inode? {
        guard let identity, identity != 0, let inode = state.byIdentity[identity], state.records[inode]?.isDetached == false else { return nil }
        return inode
    }

    private static func makeRecord(_ key: ChildKey, status: FileStatus?, counting: Bool, in state: inout State) -> Inode {
        let inode = state.nextInode
        state.nextInode += 1
        var record = Record(node: nil, parent: key.parent, name: key.name)
        if counting { record.lookupCount = 1 }
        if let status, status.identity != 0 {
            record.identity = status.identity
            let linked = status.linkCount > 1 && status.kind != .directory
            // Never in place of another live record of the number (one with writers stays followed).
            if linked || status.kind == .directory, liveRecord(numbered: status.identity, in: state) == nil {
                state.byIdentity[status.identity] = inode
            }
            if linked { state.linked[status.identity, default: []].insert(inode) }
        }
        state.records[inode] = record
        state.byName[key] = inode
        state.records[key.parent]?.childRecords += 1
        return inode
    }

    /// Whether `inode` is `descendant` or holds it: a record moved below itself would make a cycle
    /// of parents.
    private static func isAncestor(_ inode: Inode, of descendant: Inode, in state: State) -> Bool {
        var current = descendant
        while true {
            if current == inode { return true }
            guard current != .root, let record = state.records[current] else { return false }
            current = record.parent
        }
    }

    /// Gives `inode`'s record the name `key`, which no record holds, taking it off its own.
    private static func rename(_ inode: Inode, to key: ChildKey, in state: inout State) {
        guard var record = state.records[inode] else { return }
        let oldKey = ChildKey(parent: record.parent, name: record.name)
        if state.byName[oldKey] == inode { state.byName[oldKey] = nil }
        state.records[record.parent]?.childRecords -= 1
        let oldParent = record.parent
        record.parent = key.parent
        record.name = key.name
        state.records[inode] = record
        state.records[key.parent]?.childRecords += 1
        state.byName[key] = inode
        // A folder the kernel forgot, kept only for this record, goes now.
        removeIfUnused(oldParent, in: &state)
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

    /// Every path of a live inode's file: its own, and its other hard links' the table holds.
    func paths(of inode: Inode) -> [String] {
        state.withLock { state in
            guard let own = Self.path(of: inode, in: state) else { return [] }
            return [own] + Self.otherNames(of: inode, in: state).compactMap { Self.path(of: $0, in: state) }
        }
    }

    /// The records of the other names (hard links) of `inode`'s file: a change through one name
    /// changes what the others show (their link count, their attributes, a raw file's bytes).
    func otherNames(of inode: Inode) -> [Inode] { state.withLock { Self.otherNames(of: inode, in: $0) } }

    private static func otherNames(of inode: Inode, in state: State) -> [Inode] {
        guard let identity = state.records[inode]?.identity, let records = state.linked[identity], records.contains(inode) else { return [] }
        // Detached ones too: a name left to its cached readers (`supersede`), or removed while open,
        // still shows the file.
        return records.filter { $0 != inode && state.records[$0] != nil }.sorted()
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
            if record.lookupCount < .max { record.lookupCount -= UInt32(min(count, UInt64(record.lookupCount))) }
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
        var byIdentity = [UInt64: Inode](minimumCapacity: state.byIdentity.count)
        for (identity, inode) in state.byIdentity { byIdentity[identity] = inode }
        state.records = records
        state.byName = byName
        state.byIdentity = byIdentity
        return true
    }

    func opened(_ inode: Inode) {
        state.withLock { $0.records[inode]?.openCount += 1 }
    }

    /// Whether a reader opening `inode` now bypasses the page cache for its name's sake.
    /// - The inode lost its name while the reader opened (a rename replaced it after the reader
    ///   found it): a writer that reaches it is let through to the name's new inode, writing through
    ///   this one, whose one size the kernel moves with its writes (`DocumentFileSystem.open`). It
    ///   is let through only while no reader reads the inode through the cache, so a reader that
    ///   comes to choose after the rename reads directly; otherwise it sent that writer back, and a
    ///   second time on its retry (the ESTALE reached the program).
    /// - With `contention`, the name is contended: a writer was moved off cached readers there
    ///   (`supersede`), and the kernel repeats such a writer's request once, from the same thread,
    ///   through whatever inode the name leads to then. Readers that had made that inode theirs by
    ///   then would send it on a second time. So the name stays contended until every writer sent
    ///   back has come back, and then until no handle of the inode holding the name is open
    ///   (`settle`). Kept by name, not by inode: the inode holding it changes with every save by
    ///   rename, and the kernel forgets one as it revalidates the name. A writer that never comes
    ///   back (killed between its ESTALE and its retry) leaves the name's readers bypassing the
    ///   cache: slower, never wrong.
    func keepsReadersOffCache(_ inode: Inode, contention: Bool) -> Bool {
        state.withLock { state in
            guard let record = state.records[inode], !record.isDetached else { return true }
            return contention && state.contended[ChildKey(parent: record.parent, name: record.name)] != nil
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

    /// A save through a name of a file with several links made that name a file of its own, with
    /// a number of its own (the store's status after the install): the record is known by it from
    /// now on. Returns the records of the file's other names, whose link count changed.
    func renumber(_ inode: Inode, to identity: UInt64) -> [Inode] {
        state.withLock { state in
            guard identity != 0, var record = state.records[inode], !record.isDetached, record.identity != identity else { return [] }
            let others = Self.otherNames(of: inode, in: state)
            Self.unlink(inode, from: record.identity, in: &state)
            record.identity = identity
            state.records[inode] = record
            if Self.liveRecord(numbered: identity, in: state) == nil, record.node != nil { state.byIdentity[identity] = inode }
            return others
        }
    }

    /// Whether `inode`'s file was seen with several links (hard links).
    func isLinked(_ inode: Inode) -> Bool {
        state.withLock { state in state.records[inode].map { state.linked[$0.identity]?.contains(inode) == true } ?? false }
    }

    /// A hard link made through the mount: `name` in `parent` is a new name of `inode`'s file, which
    /// `status` describes, with an inode of its own (see the type's comment). Counts one lookup.
    func addName(_ inode: Inode, parent: Inode, name: FileName, status: FileStatus) -> Inode {
        state.withLock { state in
            let key = ChildKey(parent: parent, name: name)
            if let previous = state.byName[key] { Self.detach(key, of: previous, in: &state) }
            if status.identity != 0, state.records[inode]?.identity == status.identity { state.linked[status.identity, default: []].insert(inode) }
            return Self.makeRecord(key, status: status, counting: true, in: &state)
        }
    }

    /// `inode` is no longer one of the records of `identity`'s links: another of them, if any, is
    /// the one found by the number.
    private static func unlink(_ inode: Inode, from identity: UInt64, in state: inout State) {
        state.linked[identity]?.remove(inode)
        if state.linked[identity]?.isEmpty == true { state.linked[identity] = nil }
        guard state.byIdentity[identity] == inode else { return }
        state.byIdentity[identity] = state.linked[identity]?.first { state.records[$0]?.isDetached == false }
    }

    /// `name` in `parent` is gone from the store (unlink, rmdir, replaced by a rename).
    func detach(parent: Inode, name: FileName) {
        state.withLock { state in
            let key = ChildKey(parent: parent, name: name)
            guard let inode = state.byName[key] else { return }
            Self.detach(key, of: inode, in: &state)
        }
    }

    /// `inode`'s name went: the inode is detached.
    private static func detach(_ key: ChildKey, of inode: Inode, in state: inout State) {
        state.byName[key] = nil
        guard var record = state.records[inode] else { return }
        markDetached(inode, &record, in: &state)
        removeIfUnused(inode, in: &state)
    }

    /// The record names no stored item any more: its number is free for the item's next record.
    private static func markDetached(_ inode: Inode, _ record: inout Record, in state: inout State) {
        record.isDetached = true
        state.records[inode] = record
        if state.byIdentity[record.identity] == inode {
            state.byIdentity[record.identity] = state.linked[record.identity]?.first { state.records[$0]?.isDetached == false }
        }
    }

    /// Detaches `inode`, held by `node`'s cached readers, from its name, as a rename over the name
    /// would: the kernel's next lookup of the name gets another inode, while whoever holds this one
    /// keeps it. `writer`: the thread whose request is answered ESTALE for it, expected back at the
    /// name (see `keepsReadersOffCache`). Nil, changing nothing, for the root or a detached inode. A name of
    /// a file with several links moves as any name does: the others are inodes of their own.
    func supersede(_ node: Node, writer: pid_t?) -> (parent: Inode, name: FileName)? {
        let inode = node.inode
        return state.withLock { state in
            guard inode != .root, var record = state.records[inode], !record.isDetached else { return nil }
            let key = ChildKey(parent: record.parent, name: record.name)
            guard state.byName[key] == inode else { return nil }
            Self.markDetached(inode, &record, in: &state)
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
            unlink(current, from: record.identity, in: &state)
            state.records[record.parent]?.childRecords -= 1
            current = record.parent
        }
    }
}
