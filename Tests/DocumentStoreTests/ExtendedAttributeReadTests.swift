import CSystemShims
import Foundation
import Glibc
import SystemSupport
import Testing

/// Extended attributes are read into a first buffer and asked their size only when they do not fit
/// (`ExtendedAttributeRead`): every size around that buffer's, and an empty value, read back whole,
/// by path and by descriptor, and so do lists of names longer than the buffer.
@Suite struct ExtendedAttributeReadTests {
    @Test func valuesAndNamesOfEverySizeAroundTheFirstBufferReadBackWhole() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-xattr-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // One file's attributes share one block on ext4: the values on one file, the names on another.
        let file = folder + "/values"
        let descriptor = OwnedDescriptor(try FileIO.open(file, O_RDWR | O_CREAT))
        let sizes = [0, 1, 255, 256, 257, 2000]
        for size in sizes {
            let value = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ size) }
            let name = "user.size\(size)"
            try value.withUnsafeBytes { try Paths.setExtendedAttribute(file, name: name, value: $0, flags: 0) }
            #expect(try Paths.extendedAttribute(file, name: name) == value, "by path, \(size) bytes")
            #expect(try descriptor.extendedAttribute(name) == value, "by descriptor, \(size) bytes")
        }
        #expect(Set(try Paths.extendedAttributeNames(file)) == Set(sizes.map { "user.size\($0)" }))

        // A list of names several times the first buffer.
        let named = folder + "/names"
        let namedDescriptor = OwnedDescriptor(try FileIO.open(named, O_RDWR | O_CREAT))
        let names = (0..<20).map { "user." + String(repeating: "n", count: 60) + "\($0)" }
        for name in names {
            try [UInt8(1)].withUnsafeBytes { try Paths.setExtendedAttribute(named, name: name, value: $0, flags: 0) }
        }
        #expect(Set(try Paths.extendedAttributeNames(named)) == Set(names))
        #expect(Set(try namedDescriptor.extendedAttributeNames()) == Set(names))

        #expect(throws: SystemCallError.self) { try Paths.extendedAttribute(file, name: "user.absent") }
    }

    /// An item beneath a held folder (a `ConfinedTree`) is named by the folder's descriptor and its
    /// name: by the `*xattrat` calls, or through `/proc/self/fd/N/name` on a kernel without them.
    /// Both ways read, write, list and remove the item's own attributes, never a link's target's.
    /// (Serialized: the way is chosen for the whole process.)
    @Test(.serialized, arguments: [false, true]) func anItemBeneathAHeldFolderIsNamedWithOrWithoutTheAtCalls(throughProc: Bool) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-xattrat-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: true)
        let tree = try ConfinedTree(path: folder)
        docfs_xattrat_set_missing(throughProc ? 1 : 0)
        defer {
            docfs_xattrat_set_missing(0)
            tree.release()
            try? FileManager.default.removeItem(atPath: folder)
        }
        let file = folder + "/sub/file"
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        #expect(symlink("file", folder + "/sub/link") == 0)
        let value: [UInt8] = [1, 2, 3]
        try value.withUnsafeBytes { try Paths.setExtendedAttribute(file, name: "user.a", value: $0, flags: 0) }
        try [UInt8(9)].withUnsafeBytes { try Paths.setExtendedAttribute(file, name: "user.b", value: $0, flags: 0) }
        #expect(try Paths.extendedAttribute(file, name: "user.a") == value)
        #expect(Set(try Paths.extendedAttributeNames(file)) == ["user.a", "user.b"])
        try Paths.removeExtendedAttribute(file, name: "user.b")
        #expect(try Paths.extendedAttributeNames(file) == ["user.a"])
        #expect(throws: SystemCallError.self) { try Paths.extendedAttribute(file, name: "user.b") }
        // The link's own attributes, not its target's: a symbolic link has no user.* attributes.
        #expect(throws: SystemCallError.self) { try Paths.extendedAttribute(folder + "/sub/link", name: "user.a") }
        #expect(throws: SystemCallError.self) {
            try value.withUnsafeBytes { try Paths.setExtendedAttribute(folder + "/sub/link", name: "user.c", value: $0, flags: 0) }
        }
        #expect(try Paths.extendedAttributeNames(file) == ["user.a"])
        // The number attribute the store keeps identities in, by the same naming.
        try FileSystemPath.at(file) { directory, name in
            #expect(directory != AT_FDCWD, "named beneath the held folder")
            let target = AttributeTarget(name, in: directory)
            #expect(NumberAttribute.write(42, at: target, name: "user.n", exclusive: true))
            #expect(!NumberAttribute.write(43, at: target, name: "user.n", exclusive: true), "exclusive: already there")
            #expect(NumberAttribute.read(at: target, name: "user.n") == 42)
        }
    }
}
