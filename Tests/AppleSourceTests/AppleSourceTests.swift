import DocumentFS
import DocumentStore
import Foundation
import SwiftUI
import Testing

/// Apple document sources (StoryDocuments.swift) compile unchanged and behave as on Apple platforms,
/// round-tripping through `DocumentLibrary`.
struct AppleSourceTests {
    private func library(_ files: [String: String]) throws -> (DocumentLibrary, String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-apple-\(UUID().uuidString.prefix(8))").path
        for (path, text) in files {
            let url = URL(fileURLWithPath: root + "/" + path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let types: [DocumentType] = [
            .fileDocument(StoryDocument.self), .fileDocument(ScrapbookDocument.self),
            .referenceFileDocument(TallyDocument.self), .referenceFileDocument(DraftDocument.self),
        ]
        return (DocumentLibrary(store: try DirectoryStore(path: root), types: types), root)
    }

    @Test func theModulesAreThere() {
        #expect(swiftUIIsAvailable && typeModulesAreAvailable)
    }

    @Test func theAppsInfoPlistDeclaresItsTypes() {
        #expect(UTType(filenameExtension: "story") == .story)
        #expect(UTType.story.conforms(to: .plainText) && UTType.story.preferredMIMEType == "application/x-story")
        #expect(UTType.story.localizedDescription == "Story" && UTType.story.referenceURL?.host == "example.com")
        #expect(UTType(filenameExtension: "scrapbook", conformingTo: .directory) == .scrapbook && UTType.scrapbook.conforms(to: .package))
    }

    @Test func aFileDocumentRoundTrips() throws {
        let (library, root) = try library(["chapter.story": "It was a dark night."])
        let opened = try library.open(StoryDocument.self, at: "chapter.story")
        #expect(opened.document.text == "It was a dark night.")
        opened.configuration.$document.text.wrappedValue = "It was a bright morning."
        try opened.save()
        #expect(try String(contentsOfFile: root + "/chapter.story", encoding: .utf8) == "It was a bright morning.")
    }

    @Test func aPackageReusesItsExistingFiles() throws {
        let (library, root) = try library(["Trip.scrapbook/notes.txt": "Day one", "Trip.scrapbook/images/beach.jpg": "JPEG bytes"])
        let before = try FileManager.default.attributesOfItem(atPath: root + "/Trip.scrapbook/images/beach.jpg")[.systemFileNumber] as? Int
        let opened = try library.open(ScrapbookDocument.self, at: "Trip.scrapbook")
        opened.configuration.$document.notes.wrappedValue = "Day one, and two"
        try opened.save()
        let after = try FileManager.default.attributesOfItem(atPath: root + "/Trip.scrapbook/images/beach.jpg")[.systemFileNumber] as? Int
        #expect(try String(contentsOfFile: root + "/Trip.scrapbook/notes.txt", encoding: .utf8) == "Day one, and two")
        #expect(before != nil && before == after, "the existing image was carried forward (hard-linked), not rewritten")
    }

    @Test func objectWillChangeOfADocumentWithoutPublishedReachesItsSubscribers() throws {
        let (library, root) = try library(["tally.txt": "41\n"])
        let opened = try library.open(TallyDocument.self, at: "tally.txt")
        var announced = 0
        var counts: [Int] = []
        let willChange = opened.document.objectWillChange.sink { _ in announced += 1 }
        let changes = opened.document.changes.sink { counts.append($0) }
        opened.document.increment()
        opened.document.increment()
        #expect(announced == 2 && counts == [42, 43])
        #expect(opened.document.objectWillChange === opened.document.objectWillChange, "one publisher per object")
        try opened.save()
        #expect(try String(contentsOfFile: root + "/tally.txt", encoding: .utf8) == "43\n")
        willChange.cancel()
        changes.cancel()
        opened.document.increment()
        #expect(announced == 2, "a cancelled subscription hears nothing more")
    }

    @Test func publishedPropertiesPublishAndBindThroughTheConfiguration() throws {
        let (library, root) = try library(["draft.story": "Title\nBody"])
        let opened = try library.open(DraftDocument.self, at: "draft.story")
        var titles: [String] = []
        var willChange = 0
        var texts: [String] = []
        opened.document.trackTitle { titles.append($0) }
        let subscription = opened.document.objectWillChange.sink { willChange += 1 }
        let direct = opened.document.$text.sink { texts.append($0) }
        let configuration = opened.configuration
        configuration.$document.text.wrappedValue = "New title\nBody"
        configuration.$document.text.wrappedValue = "New title\nLonger body"
        #expect(titles == ["Title", "New title"] && willChange == 2, "\(titles) \(willChange)")
        #expect(texts == ["Title\nBody", "New title\nBody", "New title\nLonger body"], "$text gives the current value, then each new one")
        direct.cancel()
        try opened.save()
        #expect(try String(contentsOfFile: root + "/draft.story", encoding: .utf8) == "New title\nLonger body")
        subscription.cancel()
    }

    @Test func fileWrappersAreHashableByIdentity() {
        let first = FileWrapper(regularFileWithContents: Data("same".utf8))
        let second = FileWrapper(regularFileWithContents: Data("same".utf8))
        let wrappers: Set<FileWrapper> = [first, second, first]
        #expect(wrappers.count == 2 && first != second && first == first)
        let children = ["a": first, "b": second]
        #expect(children.filter { $0.value != first }.map(\.key) == ["b"])
    }

    @Test func urlHelpersNameFilesAfterTheirTypes() {
        let folder = URL(fileURLWithPath: "/tmp/stories", isDirectory: true)
        #expect(folder.appendingPathComponent("chapter", conformingTo: .story).lastPathComponent == "chapter.story")
        #expect(folder.appendingPathComponent("chapter.story", conformingTo: .story).lastPathComponent == "chapter.story")
        #expect(folder.appending(component: "notes", conformingTo: .plainText).lastPathComponent == "notes.txt")
        #expect(URL(fileURLWithPath: "/tmp/data").appendingPathExtension(for: .json).lastPathComponent == "data.json")
        var url = folder
        url.append(component: "scene", conformingTo: .usdz)
        #expect(url.lastPathComponent == "scene.usdz")
    }

    @Test func systemTypesApplesFrameworksDeclare() {
        #expect(UTType.usdz.identifier == "com.pixar.universal-scene-description-mobile" && UTType(filenameExtension: "usdz") == .usdz)
        #expect(UTType.realityFile.preferredFilenameExtension == "reality" && UTType.sceneKitScene.conforms(to: .threeDContent))
        #expect(UTType.ahap.conforms(to: .json) && UTType.appleProtectedMPEG4Audio.conforms(to: .audio))
        #expect(UTType.applicationExtension.conforms(to: .bundle) && UTType.osaScript.preferredFilenameExtension == "scpt")
        #expect(UTType.livePhoto.isDeclared && UTType.internetLocation.preferredFilenameExtension == "inetloc")
    }
}
