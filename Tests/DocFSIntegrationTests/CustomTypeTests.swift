import DocumentFS
import DocumentModel
import DocumentStore
import Foundation
import Glibc
import Testing

/// A reference-type document that saves its text in capitals: what it stores differs from what
/// was written, so the mount must serve the stored bytes afterwards, not the written ones.
final class ShoutingNote: ReferenceFileDocument, @unchecked Sendable {
    static var readableContentTypes: [UTType] { [.plainText] }
    private let lock = NSLock()
    @Published var text: String

    required init(configuration: ReadConfiguration) throws {
        guard let data = configuration.file.regularFileContents, let text = String(data: data, encoding: .utf8) else {
            throw CocoaError(.fileReadCorruptFile)
        }
        self.text = text
    }

    func snapshot(contentType: UTType) throws -> String { lock.withLock { text.uppercased() } }

    func fileWrapper(snapshot: String, configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: Data(snapshot.utf8))
    }
}

/// A log can be read but not written back: `.log` files are served read-only.
struct ReadOnlyLog: FileDocument {
    static var readableContentTypes: [UTType] { [.log] }
    static var writableContentTypes: [UTType] { [] }
    init(configuration: ReadConfiguration) throws {}
    func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper { throw CocoaError(.fileWriteNoPermission) }
}

/// A Swift program serving its own document types through the public API, in this process.
@Suite(.timeLimit(.minutes(10)))
struct CustomTypeTests {
    @Test func aProgramServesItsOwnReferenceAndReadOnlyTypes() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-custom-\(UUID().uuidString.prefix(8))")
        let storePath = root.appendingPathComponent("store").path
        let mountPoint = root.appendingPathComponent("mnt").path
        try FileManager.default.createDirectory(atPath: storePath, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        try Data("quiet\n".utf8).write(to: URL(fileURLWithPath: storePath + "/note.txt"))
        try Data("started\n".utf8).write(to: URL(fileURLWithPath: storePath + "/app.log"))
        defer { try? FileManager.default.removeItem(at: root) }

        let mount = DocumentMount(
            store: try DirectoryStore(path: storePath),
            types: [.fileDocument(ReadOnlyLog.self), .referenceFileDocument(ShoutingNote.self)],
            options: DocumentFSOptions())
        let ready = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let server = Thread {
            _ = try? mount.serve(at: mountPoint) { ready.signal() }
            ready.signal()
            finished.signal()
        }
        server.start()
        #expect(ready.wait(timeout: .now() + 15) == .success)
        defer {
            _ = try? MountedStore.run(["fusermount3", "-uz", mountPoint], timeout: 10)
            _ = finished.wait(timeout: .now() + 15)
        }

        let write = try MountedStore.run(["bash", "-c", "printf 'make some noise\\n' > note.txt && cat note.txt"], timeout: 30, in: mountPoint)
        #expect(write.output == "MAKE SOME NOISE\n", "the mount serves what the type stored: \(write.error)")
        #expect(try String(contentsOfFile: storePath + "/note.txt", encoding: .utf8) == "MAKE SOME NOISE\n")

        let log = try MountedStore.run(["bash", "-c", "cat app.log; stat -c %A app.log; getfattr --only-values -n user.docfs.editable app.log; printf x >> app.log"], timeout: 30, in: mountPoint)
        #expect(log.output == "started\n-r--r--r--\nfalse", "\(log.error)")
        #expect(log.error.contains("Permission denied"))
        #expect(try String(contentsOfFile: storePath + "/app.log", encoding: .utf8) == "started\n")
    }
}
