/// What a mount knows of the database: which row and version each mirrored path holds, what each
/// write in progress is based on, and how far the change log has been read.
struct MirrorState {
    private(set) var known: [String: KnownItem] = [:]
    private var paths: [Int64: String] = [:]
    /// The stored version each write in progress began from, by staging file or clone path.
    var bases: [String: (document: String, base: KnownItem?)] = [:]
    /// The last change number read from `docfs_changes`.
    var lastChange: Int64 = 0
    /// Set when the mirror may differ from the database (a commit failed after the mirror changed):
    /// the whole tree is compared again once the database answers.
    var needsFullSynchronization = false

    subscript(path: String) -> KnownItem? { known[path] }

    /// What is known, for the manifest a clean unmount leaves.
    var allKnown: [String: KnownItem] { known }

    func path(of id: Int64) -> String? { paths[id] }

    mutating func set(_ path: String, _ item: KnownItem) {
        if let old = known[path], old.id != item.id { paths[old.id] = nil }
        known[path] = item
        paths[item.id] = path
    }

    /// Forgets `path` and everything under it.
    mutating func removeSubtree(_ path: String) {
        for key in keys(under: path) {
            if let item = known.removeValue(forKey: key) { paths[item.id] = nil }
        }
    }

    /// `from` and everything under it now have `to` in its place.
    mutating func moveSubtree(from source: String, to destination: String) {
        let moved = keys(under: source).compactMap { key in known.removeValue(forKey: key).map { (key, $0) } }
        for (key, item) in moved {
            let renamed = destination + key.dropFirst(source.count)
            known[renamed] = item
            paths[item.id] = renamed
        }
    }

    /// The base of a write for `document`, when one is in progress.
    func base(forDocument document: String) -> KnownItem?? {
        bases.values.first { $0.document == document }.map { $0.base }
    }

    /// `path` and, for a folder, every path below it (a scan of what is known: folders only).
    private func keys(under path: String) -> [String] {
        if !path.isEmpty, let item = known[path], !item.isFolder { return [path] }
        let prefix = path + "/"
        return known.keys.filter { $0 == path || path.isEmpty || $0.hasPrefix(prefix) }
    }
}

/// `parent/name` and its parts, for store paths (`""` is the root).
enum StorePath {
    static func split(_ path: String) -> (parent: String, name: String) {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return ("", path) }
        return (String(path[..<slash]), String(path[path.utf8.index(after: slash)...]))
    }

    static func join(_ parent: String, _ name: String) -> String { parent.isEmpty ? name : parent + "/" + name }
}
