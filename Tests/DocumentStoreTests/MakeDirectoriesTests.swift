import Foundation
import SystemSupport
import Testing

/// `Paths.makeDirectories` is `mkdir -p` by bytes: every folder on the way is made under its own
/// name (not a UTF-8 look-alike), doubled and trailing slashes are passed by, and folders already
/// there are left as they are.
@Suite struct MakeDirectoriesTests {
    @Test func everyFolderOnTheWayIsMadeByItsBytes() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-mkdir-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let odd = FileSystemPath.string(fromBytes: Array("a".utf8) + [0xFF])
        for path in [root + "/x", root + "/" + odd + "/b/", root + "//c//d", root + "/x/e"] {
            try Paths.makeDirectories(path, mode: 0o755)
        }
        for made in ["x", odd, odd + "/b", "c", "c/d", "x/e"] {
            #expect((try? FileStatus.of(path: root + "/" + made))?.kind == .directory, "\(made.debugDescription)")
        }
        #expect(try FileIO.directoryEntries(root).sorted() == ["c", odd, "x"].sorted(), "no look-alike of a\\xff")
    }
}
