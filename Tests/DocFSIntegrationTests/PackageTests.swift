import DocumentFS
import DocumentStore
import Foundation
import Glibc
import StandardDocuments
import Testing

/// Directory packages (TextBundle) as real folders in the mount, kept whole and valid.
@Suite(.timeLimit(.minutes(10)))
struct PackageTests {
    static let info = "{\"version\": 2, \"type\": \"net.daringfireball.markdown\"}"
    static let bundle = ["Doc.textbundle/info.json": info, "Doc.textbundle/text.md": "# Title\n\nbody\n", "Doc.textbundle/assets/note.txt": "asset"]

    /// The package lines of `docfs status --all` ("valid    Doc.textbundle").
    func status(_ mount: MountedStore) throws -> String {
        let output = try MountedStore.run([MountedStore.binary, "status", "--all", mount.store], timeout: 60).output
        let packages = output.split(separator: "\n").filter { line in ["valid ", "draft ", "corrupt "].contains { line.hasPrefix($0) } }
        return packages.map { $0 + "\n" }.joined()
    }

    /// A member whose name a type claims is a document of that type too: before, `assets/x.json`
    /// holding `{bad` was accepted into a TextBundle.
    @Test func aMemberIsJudgedByItsOwnTypeToo() throws {
        let mount = try MountedStore(texts: Self.bundle)
        defer { mount.unmount() }
        #expect(try mount.save("Doc.textbundle/assets/x.json", Data("{bad".utf8)) == "EIO")
        #expect(try mount.save("Doc.textbundle/assets/y.json", Data("[1]".utf8)) == "ok")
        #expect(mount.storeContents("Doc.textbundle/assets/y.json") == "[1]")
        #expect(mount.storeContents("Doc.textbundle/assets/x.json") == "")
        #expect(mount.log.contains("refused a write to Doc.textbundle/assets/x.json: it does not decode as json"))
        #expect(mount.quarantineReasons.contains { $0.contains("document: Doc.textbundle/assets/x.json") }, "\(mount.quarantineReasons)")
        // Given the name by a rename, as sed -i and editors save.
        #expect(try mount.save("Doc.textbundle/assets/draft.tmp", Data("{bad".utf8)) == "ok")
        let renamed = try mount.run(["mv", "Doc.textbundle/assets/draft.tmp", "Doc.textbundle/assets/z.json"])
        #expect(!renamed.succeeded && renamed.error.contains("Input/output error"), "\(renamed.error)")
        #expect(mount.storeContents("Doc.textbundle/assets/draft.tmp") == "{bad")
        #expect(!FileManager.default.fileExists(atPath: mount.inStore("Doc.textbundle/assets/z.json")))
    }

    @Test func lsAndCatInsideAStoredTextBundle() throws {
        let mount = try MountedStore(texts: Self.bundle)
        defer { mount.unmount() }
        let listing = try mount.run(["ls", "-R", "Doc.textbundle"])
        #expect(listing.output == "Doc.textbundle:\nassets\ninfo.json\ntext.md\n\nDoc.textbundle/assets:\nnote.txt\n")
        #expect(try mount.read("Doc.textbundle/text.md") == "# Title\n\nbody\n")
        #expect(try mount.read("Doc.textbundle/assets/note.txt") == "asset")
        #expect(try mount.run(["getfattr", "--only-values", "-n", "user.docfs.content-type", "Doc.textbundle"]).output == "org.textbundle.package")
    }

    @Test func sedOnTheTextPersistsAndThePackageStillDecodes() throws {
        let mount = try MountedStore(texts: Self.bundle)
        defer { mount.unmount() }
        #expect(try mount.run(["sed", "-i", "s/body/edited body/", "Doc.textbundle/text.md"]).succeeded)
        #expect(mount.storeContents("Doc.textbundle/text.md") == "# Title\n\nedited body\n")
        #expect(mount.storeContents("Doc.textbundle/assets/note.txt") == "asset")
        #expect(try status(mount) == "valid    Doc.textbundle\n")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: mount.inStore("Doc.textbundle")).sorted()
        #expect(leftovers == ["assets", "info.json", "text.md"])
    }

    @Test func cpAndTarOfATextBundleIntoTheMountMakeAValidStoredPackage() throws {
        let mount = try MountedStore(texts: [:])
        defer { mount.unmount() }
        let source = mount.root.appendingPathComponent("src/Trip.textbundle").path
        try MountedStore.run(["bash", "-c", """
            mkdir -p \(source)/assets && printf '\(Self.info)' > \(source)/info.json && printf '# Trip\\n' > \(source)/text.md \
            && head -c 100000 /dev/urandom > \(source)/assets/photo.jpg \
            && tar cf \(mount.root.path)/bundle.tar -C \(mount.root.path)/src Trip.textbundle
            """], timeout: 30)
        #expect(try mount.run(["cp", "-r", source, "Copied.textbundle"]).succeeded)
        #expect(try mount.run(["mkdir", "unpacked"]).succeeded)
        let untar = try mount.run(["tar", "xf", mount.root.path + "/bundle.tar", "-C", "unpacked"])
        #expect(untar.succeeded, "\(untar.error)")
        #expect(try status(mount) == "valid    Copied.textbundle\nvalid    unpacked/Trip.textbundle\n")
        #expect(try mount.run(["diff", "-r", source, "Copied.textbundle"]).succeeded)
        #expect(try mount.run(["diff", "-r", source, "unpacked/Trip.textbundle"]).succeeded)
    }

    @Test func invalidInfoJSONIsRefusedAndThePackageKept() throws {
        let mount = try MountedStore(texts: Self.bundle)
        defer { mount.unmount() }
        let result = try mount.shell("printf '{\"version\": ' | cat > Doc.textbundle/info.json")
        #expect(!result.succeeded && result.error.contains("Input/output error"), "\(result.error)")
        #expect(mount.storeContents("Doc.textbundle/info.json") == Self.info)
        #expect(try mount.read("Doc.textbundle/info.json") == Self.info)
        // info.json is JSON of its own: judged as that first, and quarantined alone.
        #expect(mount.quarantineReasons.contains { $0.contains("document: Doc.textbundle/info.json") }, "\(mount.quarantineReasons)")
        #expect(mount.log.contains("refused a write to Doc.textbundle/info.json: it does not decode as json"))
        // Valid JSON that is no TextBundle's info is refused by the package's type, which keeps the
        // refused package whole.
        #expect(try mount.save("Doc.textbundle/info.json", Data("[]".utf8)) == "EIO")
        #expect(mount.quarantined.contains { $0.hasSuffix("Doc.textbundle") })
        #expect(mount.log.contains("refused a change to info.json in Doc.textbundle"))
        // Removing the text would leave no TextBundle: allowed (rm -r must work), but a draft again.
        #expect(try mount.run(["rm", "Doc.textbundle/text.md"]).succeeded)
        #expect(try status(mount).hasPrefix("draft    Doc.textbundle: "))
        #expect(try mount.run(["rm", "-r", "Doc.textbundle"]).succeeded)
        #expect(!FileManager.default.fileExists(atPath: mount.inStore("Doc.textbundle")))
    }

    @Test func aPackageBuiltPieceByPieceIsADraftUntilItDecodes() throws {
        let mount = try MountedStore(texts: [:])
        defer { mount.unmount() }
        #expect(try mount.shell("mkdir New.textbundle && printf '{\"version\": 2}' > New.textbundle/info.json").succeeded)
        let draft = try status(mount)
        #expect(draft.hasPrefix("draft    New.textbundle:") && draft.contains("text.md"), "\(draft)")
        #expect(try mount.read("New.textbundle/info.json") == "{\"version\": 2}", "a draft is served as it is")
        #expect(try mount.shell("printf 'hello' > New.textbundle/text.md").succeeded)
        #expect(try status(mount) == "valid    New.textbundle\n")
        #expect(mount.log.contains("New.textbundle decodes as"))
        // Now it is a package: a change that breaks it is refused.
        #expect(!(try mount.shell("printf '\\xff' | cat > New.textbundle/text.md")).succeeded)
        // Moving it moves the document; a move across its boundary is a copy.
        #expect(try mount.run(["mv", "New.textbundle", "Renamed.textbundle"]).succeeded)
        #expect(try mount.read("Renamed.textbundle/text.md") == "hello")
        #expect(try mount.run(["mv", "Renamed.textbundle/text.md", "outside.md"]).succeeded)
        #expect(mount.storeContents("outside.md") == "hello")
        #expect(try status(mount).hasPrefix("draft    Renamed.textbundle:"))
    }

    @Test func readOnlyMountsMakePackagesReadOnly() throws {
        let mount = try MountedStore(texts: Self.bundle, arguments: ["-o", "ro"])
        defer { mount.unmount() }
        #expect(try mount.read("Doc.textbundle/text.md") == "# Title\n\nbody\n")
        #expect(!(try mount.shell("printf x >> Doc.textbundle/text.md")).succeeded)
        #expect(try mount.run(["getfattr", "--only-values", "-n", "user.docfs.editable", "Doc.textbundle/text.md"]).output == "false")
    }

    @Test func sigkillDuringPackageCommitsLeavesTheOldOrTheNewPackage() throws {
        var files = Self.bundle
        for index in 0..<40 { files["Doc.textbundle/assets/a\(index).txt"] = "asset \(index)" }
        let mount = try MountedStore(texts: files)
        defer { mount.unmount() }
        let writer = try ChildProcess(["timeout", "-k", "5", "60", "python3", "-c", """
            import sys
            version = 0
            while True:
                version += 1
                try:
                    with open('Doc.textbundle/text.md', 'w') as f:
                        f.write('# Version %d\\n' % version + 'line\\n' * 2000)
                except OSError:
                    sys.exit(0)
            """], in: mount.mountPoint, capture: false)
        // Once a version after the first is in the store, kill the daemon during the saves that follow.
        #expect(MountedStore.waitUntil(seconds: 50) {
            let first = mount.storeContents("Doc.textbundle/text.md")?.split(separator: "\n").first ?? ""
            return first.hasPrefix("# Version ") && first != "# Version 1"
        })
        mount.crash()
        writer.wait()
        try mount.mount()
        let text = try #require(mount.storeContents("Doc.textbundle/text.md"))
        let version = text.split(separator: "\n").first.map(String.init) ?? ""
        #expect(version.hasPrefix("# Version ") || text == "# Title\n\nbody\n")
        if version.hasPrefix("# Version ") { #expect(text == version + "\n" + String(repeating: "line\n", count: 2000), "text.md is one whole version") }
        #expect(mount.storeContents("Doc.textbundle/info.json") == Self.info)
        let assets = try FileManager.default.contentsOfDirectory(atPath: mount.inStore("Doc.textbundle/assets"))
        #expect(assets.count == 41, "\(assets.sorted())")
        #expect(try status(mount) == "valid    Doc.textbundle\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mount.store).sorted() == [".docfs", "Doc.textbundle"])
    }

    @Test func theLibraryAPIEditsAPackageWithoutFUSE() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-lib-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        for (path, contents) in Self.bundle {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: url)
        }
        let assetBefore = try #require(FileStatusProbe(root.path + "/Doc.textbundle/assets/note.txt"))
        let library = DocumentLibrary(store: try DirectoryStore(path: root.path), types: [.fileDocument(TextBundleDocument.self)])
        let opened = try library.open(TextBundleDocument.self, at: "Doc.textbundle")
        let configuration = opened.configuration
        #expect(configuration.isEditable && configuration.fileURL?.lastPathComponent == "Doc.textbundle")
        configuration.$document.text.wrappedValue = "# Rewritten\n"
        #expect(opened.document.text == "# Rewritten\n")
        try opened.save()
        let text = try String(contentsOf: root.appendingPathComponent("Doc.textbundle/text.md"), encoding: .utf8)
        #expect(text == "# Rewritten\n")
        let assetAfter = try #require(FileStatusProbe(root.path + "/Doc.textbundle/assets/note.txt"))
        #expect(assetAfter.inode == assetBefore.inode, "the asset was carried forward, not rewritten")
        #expect(library.packageReports().map(\.state) == [.valid])
    }
}

/// The inode and modification time of a stored file.
struct FileStatusProbe {
    let inode: UInt64
    let modification: Int

    init?(_ path: String) {
        var raw = stat()
        guard lstat(path, &raw) == 0 else { return nil }
        inode = UInt64(raw.st_ino)
        modification = raw.st_mtim.tv_sec * 1_000_000_000 + raw.st_mtim.tv_nsec
    }
}

/// A process's I/O accounting from /proc/PID/io.
struct ProcessIO {
    let bytesReadBySyscalls: Int
    let storageBytesRead: Int
    let storageBytesWritten: Int

    init?(pid: pid_t) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return nil }
        var fields: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":")
            if parts.count == 2 { fields[String(parts[0])] = Int(parts[1].trimmingCharacters(in: .whitespaces)) }
        }
        guard let rchar = fields["rchar"], let readBytes = fields["read_bytes"], let writeBytes = fields["write_bytes"] else { return nil }
        bytesReadBySyscalls = rchar
        storageBytesRead = readBytes
        storageBytesWritten = writeBytes
    }
}
