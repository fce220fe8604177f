@_spi(DocumentStore) import DocumentModel
import Foundation
import Glibc
import Testing

@Suite struct FileWrapperTests {
    func inode(_ path: String) -> (inode: UInt64, links: UInt64)? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return (UInt64(status.st_ino), UInt64(status.st_nlink))
    }

    func samplePackage() -> FileWrapper {
        let assets = FileWrapper(directoryWithFileWrappers: [
            "image.png": FileWrapper(regularFileWithContents: Data([0x89, 0x50, 0x4E, 0x47])),
        ])
        let link = FileWrapper(symbolicLinkWithDestinationURL: URL(fileURLWithPath: "assets/image.png"))
        let text = FileWrapper(regularFileWithContents: Data("# Title\n".utf8))
        text.fileAttributes[FileAttributeKey.posixPermissions.rawValue] = NSNumber(value: 0o600)
        return FileWrapper(directoryWithFileWrappers: ["text.md": text, "assets": assets, "cover.png": link])
    }

    @Test func kindsAndProperties() {
        let file = FileWrapper(regularFileWithContents: Data("x".utf8))
        #expect(file.isRegularFile && !file.isDirectory && !file.isSymbolicLink)
        #expect(file.regularFileContents == Data("x".utf8) && file.fileWrappers == nil && file.preferredFilename == nil)
        let link = FileWrapper(symbolicLinkWithDestinationURL: URL(fileURLWithPath: "target.txt"))
        #expect(link.isSymbolicLink && link.regularFileContents == nil)
        #expect(link.symbolicLinkDestinationURL?.relativePath == "target.txt")
        let directory = FileWrapper(directoryWithFileWrappers: ["a.txt": file])
        #expect(directory.isDirectory && directory.preferredFilename == nil)
        #expect(file.preferredFilename == "a.txt", "a child without a name takes its key")
        #expect(directory.fileWrappers?["a.txt"] === file)
    }

    @Test func keyCollisionsFollowApplesRule() {
        let directory = FileWrapper(directoryWithFileWrappers: [:])
        let first = directory.addRegularFile(withContents: Data("1".utf8), preferredFilename: "a.txt")
        let second = directory.addRegularFile(withContents: Data("2".utf8), preferredFilename: "a.txt")
        let third = directory.addRegularFile(withContents: Data("3".utf8), preferredFilename: "a.txt")
        #expect([first, second, third] == ["a.txt", "1__#$!@%!#__a.txt", "2__#$!@%!#__a.txt"])
        #expect(directory.fileWrappers?[second]?.regularFileContents == Data("2".utf8))

        let child = try! #require(directory.fileWrappers?[third])
        #expect(directory.keyForChildFileWrapper(child) == third)
        directory.removeFileWrapper(child)
        #expect(directory.keyForChildFileWrapper(child) == nil && directory.fileWrappers?.count == 2)
    }

    @Test func changingPreferredFilenameRekeysTheChild() throws {
        let directory = FileWrapper(directoryWithFileWrappers: [:])
        let child = FileWrapper(regularFileWithContents: Data())
        child.preferredFilename = "draft.txt"
        directory.addFileWrapper(child)
        directory.addRegularFile(withContents: Data(), preferredFilename: "final.txt")
        child.preferredFilename = "renamed.txt"
        #expect(directory.keyForChildFileWrapper(child) == "renamed.txt")
        child.preferredFilename = "final.txt"
        #expect(directory.keyForChildFileWrapper(child) == "1__#$!@%!#__final.txt")
        #expect(directory.fileWrappers?.count == 2)
    }

    @Test func nestedPackageWithSymlinkWrittenAtomicallyReadsBackLazilyAndMatches() throws {
        let temporary = try TemporaryDirectory()
        let destination = temporary.url.appendingPathComponent("Doc.textbundle")
        try temporary.write("old", to: "Doc.textbundle/old.txt")
        let package = samplePackage()
        try package.write(to: destination, options: [.atomic, .withNameUpdating], originalContentsURL: nil)

        #expect(package.filename == "Doc.textbundle")
        #expect(package.fileWrappers?["text.md"]?.filename == "text.md")
        #expect(!FileManager.default.fileExists(atPath: destination.appendingPathComponent("old.txt").path), "atomic replace, not merge")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: temporary.path)
        #expect(leftovers == ["Doc.textbundle"], "no temporary item left beside the destination")

        let read = try FileWrapper(url: destination)
        #expect(read.isDirectory && read.filename == "Doc.textbundle")
        let text = try #require(read.fileWrappers?["text.md"])
        #expect(!text.hasLoadedContents, "contents are read on demand")
        #expect(text.regularFileContents == Data("# Title\n".utf8) && text.hasLoadedContents)
        #expect((text.fileAttributes[FileAttributeKey.posixPermissions.rawValue] as? NSNumber)?.intValue == 0o600)
        let link = try #require(read.fileWrappers?["cover.png"])
        #expect(link.isSymbolicLink && link.symbolicLinkDestinationPath == "assets/image.png")
        #expect(read.fileWrappers?["assets"]?.fileWrappers?["image.png"]?.regularFileContents == Data([0x89, 0x50, 0x4E, 0x47]))
        #expect(read.matchesContents(of: destination) && package.matchesContents(of: destination))

        try temporary.write("changed", to: "Doc.textbundle/text.md")
        #expect(!read.matchesContents(of: destination))
    }

    @Test func lazyReadingListsOnDemandAndImmediateReadsNow() throws {
        let temporary = try TemporaryDirectory()
        try temporary.write("a", to: "pkg/a.txt")
        let lazy = try FileWrapper(url: temporary.url.appendingPathComponent("pkg"))
        let immediate = try FileWrapper(url: temporary.url.appendingPathComponent("pkg"), options: .immediate)
        try temporary.write("b", to: "pkg/b.txt")
        #expect(Set(lazy.fileWrappers?.keys ?? [:].keys) == ["a.txt", "b.txt"])
        #expect(Set(immediate.fileWrappers?.keys ?? [:].keys) == ["a.txt"])
        #expect(immediate.fileWrappers?["a.txt"]?.hasLoadedContents == true)
    }

    /// A store changing one member reads and replaces children one at a time; a listing made later
    /// keeps what was read (the same wrappers) and what was replaced.
    @Test func childrenReadAndReplacedOneAtATimeBeforeAListing() throws {
        let temporary = try TemporaryDirectory()
        try temporary.write("a", to: "pkg/a.txt")
        try temporary.write("b", to: "pkg/b.txt")
        let package = try FileWrapper(url: temporary.url.appendingPathComponent("pkg"))
        let a = package.child(named: "a.txt")
        #expect(a?.regularFileContents == Data("a".utf8))
        #expect(package.child(named: "missing") == nil)
        package.replaceChild(named: "b.txt", with: nil)
        package.replaceChild(named: "new.txt", with: FileWrapper(regularFileWithContents: Data("n".utf8)))
        #expect(package.child(named: "b.txt") == nil)
        try temporary.write("c", to: "pkg/c.txt")
        let listed = try #require(package.fileWrappers)
        #expect(Set(listed.keys) == ["a.txt", "c.txt", "new.txt"])
        #expect(listed["a.txt"] === a)
        #expect(listed["new.txt"]?.preferredFilename == "new.txt")
        // Once listed, one at a time works on the listing.
        package.replaceChild(named: "c.txt", with: nil)
        #expect(Set(package.fileWrappers?.keys ?? [:].keys) == ["a.txt", "new.txt"])
    }

    @Test func aLargeFileIsMappedNotCopied() throws {
        try ResidentMemory.measuring {
            let temporary = try TemporaryDirectory()
            let path = temporary.path + "/big.bin"
            let descriptor = open(path, O_CREAT | O_WRONLY, 0o644)
            #expect(ftruncate(descriptor, 1 << 30) == 0)
            close(descriptor)

            let before = residentBytes()
            let wrapper = try FileWrapper(url: URL(fileURLWithPath: path))
            let contents = try #require(wrapper.regularFileContents)
            #expect(contents.count == 1 << 30)
            #expect(contents[contents.count / 2] == 0)
            let growth = residentBytes() - before
            #expect(growth < 64 << 20, "opening a 1 GiB file grew the process by \(growth) bytes")
        }
    }

    func residentBytes() -> Int { ResidentMemory.bytes }

    @Test func aFailedAtomicWriteLeavesTheOldContentAndNoLeftovers() throws {
        let temporary = try TemporaryDirectory()
        try temporary.write("original", to: "pkg/text.md")
        let destination = temporary.url.appendingPathComponent("pkg")
        let broken = FileWrapper(directoryWithFileWrappers: [
            "text.md": FileWrapper(regularFileWithContents: Data("new".utf8)),
            // A key with a slash cannot be created: the write fails half-way through the package.
            "missing/child.txt": FileWrapper(regularFileWithContents: Data("x".utf8)),
        ])
        #expect(throws: CocoaError.self) { try broken.write(to: destination, options: .atomic, originalContentsURL: nil) }
        #expect(try String(contentsOf: destination.appendingPathComponent("text.md"), encoding: .utf8) == "original")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path) == ["pkg"])
    }

    @Test func unchangedChildrenAreHardLinkedFromTheOriginal() throws {
        let temporary = try TemporaryDirectory()
        try temporary.write(String(repeating: "asset ", count: 100_000), to: "v1/assets/big.bin")
        try temporary.write("text", to: "v1/text.md")
        let original = temporary.url.appendingPathComponent("v1")
        let package = try FileWrapper(url: original)
        package.fileWrappers?["text.md"].map(package.removeFileWrapper)
        package.addRegularFile(withContents: Data("edited".utf8), preferredFilename: "text.md")
        let destination = temporary.url.appendingPathComponent("v2")
        try package.write(to: destination, options: .atomic, originalContentsURL: original)

        let originalAsset = try #require(inode(original.path + "/assets/big.bin"))
        let newAsset = try #require(inode(destination.path + "/assets/big.bin"))
        #expect(originalAsset.inode == newAsset.inode && newAsset.links == 2)
        #expect(package.fileWrappers?["assets"]?.fileWrappers?["big.bin"]?.hasLoadedContents == false, "the asset was never read")
        #expect(try String(contentsOf: destination.appendingPathComponent("text.md"), encoding: .utf8) == "edited")
    }

    @Test func serializedRepresentationRoundTripsANestedPackage() throws {
        let package = samplePackage()
        let date = Date(timeIntervalSince1970: 1_700_000_000.5)
        package.fileWrappers?["assets"]?.fileAttributes[FileAttributeKey.modificationDate.rawValue] = date
        let data = try #require(package.serializedRepresentation)
        let copy = try #require(FileWrapper(serializedRepresentation: data))
        #expect(copy.serializedRepresentation == data)
        #expect(copy.fileWrappers?["text.md"]?.regularFileContents == Data("# Title\n".utf8))
        #expect((copy.fileWrappers?["text.md"]?.fileAttributes[FileAttributeKey.posixPermissions.rawValue] as? NSNumber)?.intValue == 0o600)
        #expect(copy.fileWrappers?["assets"]?.fileAttributes[FileAttributeKey.modificationDate.rawValue] as? Date == date)
        #expect(copy.fileWrappers?["cover.png"]?.symbolicLinkDestinationPath == "assets/image.png")
        #expect(FileWrapper(serializedRepresentation: Data("not an archive".utf8)) == nil)
        #expect(FileWrapper(serializedRepresentation: data.dropLast()) == nil)
    }

    @Test func errorsAreCocoaErrorsWithTheURL() throws {
        let missing = URL(fileURLWithPath: "/nonexistent-docfs/file.txt")
        let readError = try #require(throws: CocoaError.self) { _ = try FileWrapper(url: missing) }
        #expect(readError.code == .fileReadNoSuchFile && readError.url == missing)
        let writeError = try #require(throws: CocoaError.self) {
            try FileWrapper(regularFileWithContents: Data()).write(to: missing, options: [], originalContentsURL: nil)
        }
        #expect(writeError.code == .fileNoSuchFile && writeError.url == missing)
    }

    @Test func withoutMappingReadsIntoMemoryAndMappingDoesNot() throws {
        try ResidentMemory.measuring {
            let temporary = try TemporaryDirectory()
            let path = temporary.path + "/data.bin"
            try Data(repeating: 7, count: 32 << 20).write(to: URL(fileURLWithPath: path))
            var before = residentBytes()
            let mapped = try FileWrapper(url: URL(fileURLWithPath: path))
            #expect(mapped.regularFileContents?.count == 32 << 20)
            #expect(residentBytes() - before < 8 << 20, "a mapping costs no memory until its pages are touched")
            before = residentBytes()
            let read = try FileWrapper(url: URL(fileURLWithPath: path), options: .withoutMapping)
            #expect(read.regularFileContents?.count == 32 << 20)
            #expect(residentBytes() - before >= 30 << 20, "withoutMapping reads the bytes into memory")
            #expect(read.regularFileContents == mapped.regularFileContents)
        }
    }

    @Test func aWriteTheFileSystemRefusesIsFileWriteNoPermission() throws {
        // An immutable directory refuses new entries even to root (EPERM).
        let temporary = try TemporaryDirectory()
        let locked = temporary.path + "/locked"
        try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
        try #require(Self.chattr("+i", locked), "chattr (e2fsprogs) sets the immutable flag")
        defer { _ = Self.chattr("-i", locked) }
        let url = URL(fileURLWithPath: locked + "/doc.txt")
        for options: FileWrapper.WritingOptions in [[], .atomic] {
            let error = try #require(throws: CocoaError.self) {
                try FileWrapper(regularFileWithContents: Data("x".utf8)).write(to: url, options: options, originalContentsURL: nil)
            }
            #expect(error.code == .fileWriteNoPermission && error.url == url)
        }
    }

    static func chattr(_ flag: String, _ path: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        process.arguments = [flag, path]
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test func readingReplacesContentAndModificationDatesAreKept() throws {
        let temporary = try TemporaryDirectory()
        try temporary.write("one", to: "a.txt")
        let wrapper = FileWrapper(regularFileWithContents: Data())
        try wrapper.read(from: temporary.url.appendingPathComponent("a.txt"), options: .immediate)
        #expect(wrapper.regularFileContents == Data("one".utf8) && wrapper.filename == "a.txt")
        let date = Date(timeIntervalSince1970: 1_600_000_000)
        wrapper.fileAttributes[FileAttributeKey.modificationDate.rawValue] = date
        let copy = temporary.url.appendingPathComponent("b.txt")
        try wrapper.write(to: copy, options: .atomic, originalContentsURL: nil)
        let attributes = try FileManager.default.attributesOfItem(atPath: copy.path)
        #expect(attributes[.modificationDate] as? Date == date)
    }

    /// Issue 35: names are bytes. A folder on Linux holds the NFC and NFD spellings of "café" as two
    /// files, which a `String` holds equal: the wrapper read from it kept one child (the other was
    /// lost), so a package restored from its version, or written by a document type, lost a member.
    /// Now the second spelling gets a key of its own and is written under its own name, lazily
    /// read or not, and each spelling's child is found by its bytes.
    @Test(arguments: [FileWrapper.ReadingOptions(), .immediate])
    func twoNamesAStringHoldsEqualAreTwoChildrenWrittenByTheirBytes(options: FileWrapper.ReadingOptions) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("wrapper-names-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let nfc = "caf\u{E9}.txt", nfd = "cafe\u{301}.txt"
        #expect(nfc == nfd, "Swift holds them equal")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("in"), withIntermediateDirectories: true)
        for (name, text) in [(nfc, "nfc"), (nfd, "nfd")] {
            let descriptor = open(folder.path + "/in/" + name, O_WRONLY | O_CREAT | O_EXCL, 0o644)
            #expect(descriptor >= 0)
            _ = text.withCString { write(descriptor, $0, strlen($0)) }
            close(descriptor)
        }
        let wrapper = try FileWrapper(url: folder.appendingPathComponent("in"), options: options)
        #expect(wrapper.fileWrappers?.count == 2)
        #expect(Set(wrapper.fileWrappers?.values.compactMap { $0.regularFileContents.map { String(decoding: $0, as: UTF8.self) } } ?? []) == ["nfc", "nfd"])
        #expect(wrapper.child(named: nfd)?.regularFileContents == Data("nfd".utf8))
        #expect(wrapper.child(named: nfc)?.regularFileContents == Data("nfc".utf8))
        try wrapper.write(to: folder.appendingPathComponent("out"), options: .atomic, originalContentsURL: nil)
        let written = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/out").map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
        #expect(written == [Array(nfd.utf8), Array(nfc.utf8)].sorted { $0.lexicographicallyPrecedes($1) })
        for (name, text) in [(nfc, "nfc"), (nfd, "nfd")] {
            #expect(FileManager.default.contents(atPath: folder.path + "/out/" + name) == Data(text.utf8), "\(Array(name.utf8))")
        }
        // One spelling replaced by its bytes leaves the other as it was.
        wrapper.replaceChild(named: nfd, with: FileWrapper(regularFileWithContents: Data("new".utf8)))
        #expect(wrapper.child(named: nfd)?.regularFileContents == Data("new".utf8))
        #expect(wrapper.child(named: nfc)?.regularFileContents == Data("nfc".utf8))
    }
}
