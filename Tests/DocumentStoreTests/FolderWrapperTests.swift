import DocumentModel
import DocumentStore
import Foundation
import Glibc
import Testing

/// `withFolderWrapper` reads the folder its path named when it began, whatever moves meanwhile:
/// a package decoded while it is renamed is read whole (issue 40, EIO on opens inside a package
/// renamed back and forth).
@Suite struct FolderWrapperTests {
    @Test func aFolderRenamedWhileReadIsReadWholeFromWhereItWent() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-folder-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/P1.textbundle/assets", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder + "/P2.textbundle", withIntermediateDirectories: true)
        try Data("one".utf8).write(to: URL(fileURLWithPath: folder + "/P1.textbundle/text.md"))
        try Data("image".utf8).write(to: URL(fileURLWithPath: folder + "/P1.textbundle/assets/a.png"))
        try Data("two".utf8).write(to: URL(fileURLWithPath: folder + "/P2.textbundle/text.md"))
        let store = try DirectoryStore(path: folder)
        let read = try store.withFolderWrapper(at: "P1.textbundle") { wrapper, status -> [String] in
            // The names swap before anything of the folder is read.
            #expect(rename(folder + "/P1.textbundle", folder + "/T") == 0)
            #expect(rename(folder + "/P2.textbundle", folder + "/P1.textbundle") == 0)
            #expect(status.kind == .directory)
            #expect(wrapper.isDirectory)
            #expect(wrapper.filename == "P1.textbundle")
            let children = wrapper.fileWrappers ?? [:]
            let text = children["text.md"]?.regularFileContents.map { String(decoding: $0, as: UTF8.self) }
            let asset = children["assets"]?.fileWrappers?["a.png"]?.regularFileContents.map { String(decoding: $0, as: UTF8.self) }
            return [children.keys.sorted().joined(separator: ","), text ?? "-", asset ?? "-"]
        }
        #expect(read == ["assets,text.md", "one", "image"])
    }
}
