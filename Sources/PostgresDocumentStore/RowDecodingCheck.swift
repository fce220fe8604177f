import Foundation
import SystemSupport

/// The mirror's reading of `docfs_items` rows, without a database: for fuzzing what a store's
/// rows can make a mount do (`docfs-fuzz row`). Whoever can write the database chooses every byte
/// of every column.
public enum RowDecodingCheck {
    /// Decodes `encoded` as rows (see `rows(from:)`), builds the tree a query would return, and
    /// walks it down from the first row as a mount's synchronization does: the name each row is
    /// mirrored under, its path, what the mount records of it. Returns how many rows would be
    /// mirrored.
    @discardableResult
    public static func mirror(encodedRows encoded: Data) -> Int {
        var tree = ItemTree()
        let rows = rows(from: [UInt8](encoded))
        for (item, _) in rows { tree.add(item) }
        for (item, attributes) in rows {
            tree.items[item.id]?.extendedAttributes.append(contentsOf: attributes.map { (FileSystemPath.string(fromBytes: $0.name), $0.value) })
        }
        guard let root = rows.first?.item.id else { return 0 }
        tree.detachFromParent(root)
        return walk(tree, folder: root, path: "")
    }

    /// Each row: `StoredItem.columnCount` columns, then a count byte and that many extended
    /// attributes (a name and a value column each). A column is a length byte and that many bytes;
    /// the length 255 is NULL. Input that ends early ends the last row with NULLs.
    static func rows(from bytes: [UInt8]) -> [(item: StoredItem, attributes: [(name: [UInt8], value: [UInt8])])] {
        var position = 0
        func column() -> [UInt8]? {
            guard position < bytes.count else { return nil }
            let length = Int(bytes[position])
            position += 1
            guard length != 255 else { return nil }
            let end = min(bytes.count, position + length)
            defer { position = end }
            return Array(bytes[position..<end])
        }
        var rows: [(item: StoredItem, attributes: [(name: [UInt8], value: [UInt8])])] = []
        while position < bytes.count {
            let item = StoredItem(columns: (0..<StoredItem.columnCount).map { _ in column() })
            var attributes: [(name: [UInt8], value: [UInt8])] = []
            let count = position < bytes.count ? Int(bytes[position]) : 0
            position += 1
            for _ in 0..<count where position < bytes.count {
                attributes.append((column() ?? [], column() ?? []))
            }
            rows.append((item, attributes))
        }
        return rows
    }

    /// What `PostgresStore.fetch` reads of each row below `folder`, in the same order.
    private static func walk(_ tree: ItemTree, folder: Int64, path: String) -> Int {
        var mirrored = 0
        for child in tree.childItems(of: folder) {
            guard case .success(let name) = StoredItem.mirroredName(of: child, inFolder: path) else { continue }
            let known = KnownItem(child)
            _ = (known.cachedBytes, child.times, child.target, child.extendedAttributes.map(\.name))
            mirrored += 1
            if child.isDirectory { mirrored += walk(tree, folder: child.id, path: StorePath.join(path, name)) }
        }
        return mirrored
    }
}
