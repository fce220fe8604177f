import Foundation
import Glibc
import SystemSupport

/// The document-facing surface of Apple's `NSFileVersion`, over a DocFS mount: every save there
/// keeps the version it replaced, and `MOUNT/.versions/PATH/` lists them (see docfs(1), VERSIONS).
/// So a document app ported to Linux can offer "Revert To › Browse All Versions" as on macOS.
///
/// Faithful to Apple's names and meanings where they fit:
/// - `currentVersionOfItem(at:)` is the file itself; `otherVersionsOfItem(at:)` its earlier
///   versions, oldest first, each with the save time as `modificationDate`; both are nil for an
///   item that is not in a DocFS mount keeping versions (as Apple's are for an item they cannot
///   version).
/// - `replaceItem(at:options:)` writes the version's contents over the item: an ordinary save
///   through the mount, validated like any other, which keeps the version it replaces in turn.
/// - `removeOtherVersionsOfItem(at:)` and `remove()` drop versions (the mount lets their owner).
///
/// Not carried over: conflicts (DocFS refuses a conflicting save instead of keeping both, so
/// `unresolvedConflictVersionsOfItem` is always empty), `addOfItem` (every save adds one) and
/// thumbnails.
public final class NSFileVersion: NSObject {
    public struct ReplacingOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Apple moves the version's file into place and the version goes; here the contents are
        /// written and the version stays (it is the mount's, read-only).
        public static let byMoving = ReplacingOptions(rawValue: 1)
    }

    /// Where this version's contents are: the item itself, or its entry in `MOUNT/.versions`.
    public let url: URL
    public let modificationDate: Date?
    /// The name of the document's file, as Apple shows it.
    public let localizedName: String?
    public let localizedNameOfSavingComputer: String?
    public let isConflict = false
    public var isResolved = true
    public var isDiscardable = false
    public let hasLocalContents = true
    public let hasThumbnail = false
    /// The version's name in `.versions` (its save time and the document's extension); the item's
    /// own path for the current version.
    public let persistentIdentifier: String
    private let isCurrent: Bool

    private init(url: URL, modificationDate: Date?, documentName: String, isCurrent: Bool) {
        self.url = url
        self.modificationDate = modificationDate
        self.localizedName = documentName
        self.isCurrent = isCurrent
        self.persistentIdentifier = isCurrent ? url.path : url.lastPathComponent
        localizedNameOfSavingComputer = Self.hostName
    }

    /// Looked up once: ProcessInfo may ask DNS.
    private static let hostName = ProcessInfo.processInfo.hostName

    // MARK: Finding versions

    /// The item as it is now; nil when it does not exist.
    public class func currentVersionOfItem(at url: URL) -> NSFileVersion? {
        guard let status = try? FileStatus.of(path: url.standardizedFileURL.path) else { return nil }
        return NSFileVersion(url: url, modificationDate: status.modificationDate, documentName: url.lastPathComponent, isCurrent: true)
    }

    /// The item's earlier versions, oldest first; nil when it is not in a DocFS mount that keeps
    /// versions. A removed item's versions are still listed.
    public class func otherVersionsOfItem(at url: URL) -> [NSFileVersion]? {
        guard let folder = versionsFolder(of: url) else { return nil }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().compactMap { name in
            guard let saved = VersionName.savedTime(of: name) else { return nil }
            return NSFileVersion(
                url: folder.appendingPathComponent(name), modificationDate: saved, documentName: url.lastPathComponent, isCurrent: false)
        }
    }

    /// Always empty: DocFS keeps no conflict versions.
    public class func unresolvedConflictVersionsOfItem(at url: URL) -> [NSFileVersion]? {
        versionsFolder(of: url) == nil ? nil : []
    }

    /// The version of the item at `url` that `persistentIdentifier` names.
    public class func version(itemAt url: URL, forPersistentIdentifier persistentIdentifier: Any) -> NSFileVersion? {
        guard let identifier = persistentIdentifier as? String else { return nil }
        if identifier == url.path { return currentVersionOfItem(at: url) }
        return otherVersionsOfItem(at: url)?.first { $0.persistentIdentifier == identifier }
    }

    // MARK: Changing

    /// Writes this version's contents over the item at `url` and returns `url`. Through a DocFS
    /// mount this is a save: a version that would not be a valid document there is refused (the
    /// error is the write's), and the replaced contents become a version in turn. A package's
    /// version replaces the package's files one by one, then removes those it did not have.
    @discardableResult
    public func replaceItem(at url: URL, options: ReplacingOptions = []) throws -> URL {
        if isCurrent && url.standardizedFileURL == self.url.standardizedFileURL { return url }
        let source = try FileStatus.of(path: self.url.path)
        if source.kind == .directory {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            try Self.replaceFolder(url.path, with: self.url.path)
        } else {
            try FileIO.writeCopy(of: self.url.path, over: url.path)
        }
        return url
    }

    /// Removes this version (the current version cannot be).
    public func remove() throws {
        guard !isCurrent else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: url.path]) }
        let status = try FileStatus.of(path: url.path)
        if status.kind == .directory {
            try Paths.removeDirectory(url.path)
        } else {
            try Paths.removeFile(url.path)
        }
    }

    /// Removes every earlier version of the item.
    public class func removeOtherVersionsOfItem(at url: URL) throws {
        for version in otherVersionsOfItem(at: url) ?? [] { try version.remove() }
    }

    // MARK: The mount

    /// `MOUNT/.versions/PATH` for the item at `url`: the mount is the highest folder above it on
    /// the same file system, and must show `.versions`.
    private class func versionsFolder(of url: URL) -> URL? {
        let path = url.standardizedFileURL.resolvingSymlinksInPath().path
        var folder = (path as NSString).deletingLastPathComponent
        guard let device = (try? FileStatus.of(path: folder))?.device else { return nil }
        var root = folder
        while folder != "/" {
            folder = (folder as NSString).deletingLastPathComponent
            guard (try? FileStatus.of(path: folder))?.device == device else { break }
            root = folder
        }
        let versions = root + "/.versions"
        // By bytes: a first name beginning with a combining mark joins the "/" into one Character.
        let prefix = root == "/" ? "/" : root + "/"
        guard (try? FileStatus.of(path: versions))?.kind == .directory, path.utf8.starts(with: prefix.utf8) else { return nil }
        return URL(fileURLWithPath: versions + "/" + String(Substring(path.utf8.dropFirst(prefix.utf8.count))))
    }

    /// Makes the folder at `destination` hold what the one at `source` holds, member by member.
    /// Names by bytes: the NFC and NFD spellings of one name are two members, and one the version
    /// lacks goes though the other is there.
    private class func replaceFolder(_ destination: String, with source: String) throws {
        do { try Paths.makeDirectory(destination, mode: 0o755) } catch let error as SystemCallError where error.errno == EEXIST {}
        let wanted = try FileIO.directoryEntries(source)
        for name in wanted {
            let from = source + "/" + name, to = destination + "/" + name
            if try FileStatus.of(path: from).kind == .directory {
                try replaceFolder(to, with: from)
            } else {
                try FileIO.writeCopy(of: from, over: to)
            }
        }
        let kept = Set(wanted.map(PathKey.init))
        for name in try FileIO.directoryEntries(destination) where !kept.contains(PathKey(name)) {
            try FileIO.removeItem(destination + "/" + name)
        }
    }
}
