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
}
