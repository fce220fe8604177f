import Foundation
import Glibc
import SystemSupport

/// A file-system item in memory: a regular file, a directory of child wrappers, or a symbolic link.
/// The Linux port of Foundation's `FileWrapper`, with the same API and behaviour.
///
/// Wrappers read from disk are lazy unless `.immediate` is given: a regular file's bytes are read on
/// first access (memory-mapped when large, so a 1 GiB file costs address space, not memory), and a
/// directory lists its children on first access. Like Apple's, a wrapper is not meant to be mutated
/// from several threads at once; its lazy loading is safe to trigger from any thread.
open class FileWrapper: @unchecked Sendable {
    public struct ReadingOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Read every byte of the item and its descendants now.
        public static let immediate = ReadingOptions(rawValue: 1 << 0)
        /// Never memory-map regular file contents; read them into memory.
        public static let withoutMapping = ReadingOptions(rawValue: 1 << 1)
    }

    public struct WritingOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Write to a temporary item and move it into place, so the destination is never partial.
        public static let atomic = WritingOptions(rawValue: 1 << 0)
        /// Set `filename` of the wrapper and its descendants to the names written.
        public static let withNameUpdating = WritingOptions(rawValue: 1 << 1)
        /// DocFS extension, not on Apple platforms: hard-link every regular file that is unchanged
        /// since it was read, wherever it was read from (on the same file system), not only those
        /// inside `originalContentsURL`. For stores that never modify a file in place, where a
        /// shared inode cannot be changed behind the other name's back.
        public static let linkingUnchangedFiles = WritingOptions(rawValue: 1 << 8)
    }

    enum Kind { case regularFile, directory, symbolicLink }

    /// Where a wrapper's content was read from, and the file's version then: lets lazy loads find
    /// the bytes, lets `write(…originalContentsURL:)` reuse unchanged files, and answers
    /// `matchesContents(of:)`.
    struct Source {
        var path: String
        var status: FileStatus
        var options: ReadingOptions
    }

    private let lock = NSLock()
    private(set) var kind: Kind
    private var loadedContents: Data?
    private var loadedChildren: [String: FileWrapper]?
    /// Children read or replaced one at a time before the directory was listed (`child(named:)`,
    /// `replaceChild(named:with:)`): a listing, when one is made, takes them as they are. A nil
    /// value is a child removed. By the name's bytes, as the directory holds them.
    private var childOverlay: [PathKey: FileWrapper?] = [:]
    private var symbolicLinkDestination: String?
    var source: Source?
    /// Parents holding this wrapper, so a new `preferredFilename` can re-key it in each of them.
    private var parents: [WeakParent] = []

    private struct WeakParent { weak var wrapper: FileWrapper? }

    public var filename: String?

    /// The name the wrapper would like; changing it re-keys the wrapper in every parent.
    public var preferredFilename: String? {
        didSet {
            // By bytes: a new spelling (NFD for NFC) is a new name, though a `String` holds it equal.
            switch (preferredFilename, oldValue) {
            case (nil, nil): return
            case let (new?, old?) where FileSystemPath.same(new, old): return
            default: break
            }
            for parent in parents.compactMap(\.wrapper) { parent.rekey(self) }
        }
    }

    /// File attributes with `FileManager`'s keys (`FileAttributeKey.rawValue`): POSIX permissions,
    /// modification date, size, type, owner and group IDs, link count, inode and device numbers.
    public var fileAttributes: [String: Any] = [:]

    // MARK: Creating

    public init(regularFileWithContents contents: Data) {
        kind = .regularFile
        loadedContents = contents
    }

    public init(directoryWithFileWrappers childrenByPreferredName: [String: FileWrapper]) {
        kind = .directory
        for (key, child) in childrenByPreferredName where child.preferredFilename == nil {
            child.preferredFilename = key
        }
        loadedChildren = childrenByPreferredName
        for child in childrenByPreferredName.values { child.parents.append(WeakParent(wrapper: self)) }
    }

    public init(symbolicLinkWithDestinationURL url: URL) {
        kind = .symbolicLink
        symbolicLinkDestination = Self.linkText(for: url)
    }

    /// Reads the item at `url`; lazily unless `options` contains `.immediate`.
    public required init(url: URL, options: ReadingOptions = []) throws {
        kind = .regularFile
        try read(from: url, options: options)
    }

    /// Rebuilds a wrapper from `serializedRepresentation`; nil when the data is not one.
    public convenience init?(serializedRepresentation data: Data) {
        guard let decoded = try? FileWrapperArchive.decode(data) else { return nil }
        self.init(copying: decoded)
    }

    private init(copying other: FileWrapper) {
        kind = other.kind
        loadedContents = other.loadedContents
        symbolicLinkDestination = other.symbolicLinkDestination
        filename = other.filename
        preferredFilename = other.preferredFilename
        fileAttributes = other.fileAttributes
        if let children = other.loadedChildren {
            loadedChildren = children
            for child in children.values {
                child.parents.removeAll { $0.wrapper === other }
                child.parents.append(WeakParent(wrapper: self))
            }
        }
    }

    // MARK: Kind and contents

    public var isRegularFile: Bool { kind == .regularFile }
    public var isDirectory: Bool { kind == .directory }
    public var isSymbolicLink: Bool { kind == .symbolicLink }

    /// The file's bytes, read (or mapped) on first access; nil for directories and links, and for a
    /// lazy wrapper whose file can no longer be read.
    public var regularFileContents: Data? {
        guard kind == .regularFile else { return nil }
        return lock.withLock {
            if let loadedContents { return loadedContents }
            guard let source else { return nil }
            loadedContents = try? Self.readContents(atPath: source.path, options: source.options)
            return loadedContents
        }
    }

    /// The children by key, listed on first access; nil unless this is a directory.
    public var fileWrappers: [String: FileWrapper]? {
        guard kind == .directory else { return nil }
        return lock.withLock { loadChildren() }
    }

    public var symbolicLinkDestinationURL: URL? {
        guard kind == .symbolicLink, let symbolicLinkDestination else { return nil }
        return URL(fileURLWithPath: symbolicLinkDestination)
    }

    /// The link's target text exactly as stored (a URL made from a relative path is absolutised by
    /// Foundation on Linux; this is the text `readlink` returns).
    public var symbolicLinkDestinationPath: String? { kind == .symbolicLink ? symbolicLinkDestination : nil }

    /// Whether the regular file's bytes are in memory (or mapped) yet; false for a lazy wrapper
    /// that nobody read. Lets hosts verify that decoding did not touch what it did not need.
    public var hasLoadedContents: Bool { lock.withLock { loadedContents != nil } }

    // MARK: Children

    /// Adds a child under its preferred filename, or under a unique key derived from it when that
    /// is taken (`1__#$!@%!#__name`, `2__#$!@%!#__name`, …); returns the key.
    @discardableResult
    open func addFileWrapper(_ child: FileWrapper) -> String {
        precondition(kind == .directory, "addFileWrapper(_:) on a FileWrapper that is not a directory")
        guard let name = child.preferredFilename, !name.isEmpty else {
            preconditionFailure("addFileWrapper(_:) needs a child with a preferredFilename")
        }
        return lock.withLock {
            var children = loadChildren() ?? [:]
            let key = Self.uniqueKey(for: name, in: children)
            children[key] = child
            loadedChildren = children
            child.parents.append(WeakParent(wrapper: self))
            return key
        }
    }

    @discardableResult
    open func addRegularFile(withContents data: Data, preferredFilename fileName: String) -> String {
        let child = FileWrapper(regularFileWithContents: data)
        child.preferredFilename = fileName
        return addFileWrapper(child)
    }

    open func removeFileWrapper(_ child: FileWrapper) {
        lock.withLock {
            guard var children = loadChildren(), let key = children.first(where: { $0.value === child })?.key else { return }
            children[key] = nil
            loadedChildren = children
        }
        child.parents.removeAll { $0.wrapper === self || $0.wrapper == nil }
    }

    open func keyForChildFileWrapper(_ child: FileWrapper) -> String? {
        lock.withLock { loadChildren()?.first(where: { $0.value === child })?.key }
    }

    private func rekey(_ child: FileWrapper) {
        lock.withLock {
            guard var children = loadChildren(), let key = children.first(where: { $0.value === child })?.key else { return }
            children[key] = nil
            let name = child.preferredFilename ?? key
            children[Self.uniqueKey(for: name, in: children)] = child
            loadedChildren = children
        }
    }

    /// `name`, or where a key `String` holds equal is taken, `N__#$!@%!#__name`. A directory on
    /// Linux may hold two names a `String` holds equal (the NFC and NFD spellings of "café"): the
    /// second read gets such a key, and keeps its own name in `filename`, which the writer uses
    /// (see `FileWrapperWriter.names`), so neither is lost.
    static func uniqueKey(for name: String, in children: [String: FileWrapper]) -> String {
        if children[name] == nil { return name }
        var counter = 1
        while children["\(counter)__#$!@%!#__\(name)"] != nil { counter += 1 }
        return "\(counter)__#$!@%!#__\(name)"
    }

    /// Call with `lock` held.
    private func loadChildren() -> [String: FileWrapper]? {
        if let loadedChildren { return loadedChildren }
        guard kind == .directory, let source else { return nil }
        var children: [String: FileWrapper] = [:]
        for name in (try? FileIO.directoryEntries(source.path)) ?? [] where childOverlay[PathKey(name)] == nil {
            guard let child = readChild(named: name, of: source) else { continue }
            children[Self.uniqueKey(for: name, in: children)] = child
        }
        for case let (name, child?) in childOverlay { children[Self.uniqueKey(for: name.path, in: children)] = child }
        childOverlay = [:]
        loadedChildren = children
        return children
    }

    /// Call with `lock` held.
    private func readChild(named name: String, of source: Source) -> FileWrapper? {
        // A URL marked as no directory: one left unmarked is looked up by Foundation (a stat of the
        // whole path from /, beside the store's confinement) only to learn what `read` learns again.
        let url = URL(fileURLWithPath: source.path + "/" + name, isDirectory: false)
        guard let child = try? FileWrapper(url: url, options: source.options) else { return nil }
        child.parents.append(WeakParent(wrapper: self))
        return child
    }

    // MARK: One child at a time

    /// The child named `name` of a directory read from disk, reading that one item only when the
    /// directory has not been listed: a store changing one member of a package of thousands
    /// decodes it without listing the folders the document type never looks into.
    @_spi(DocumentStore) public func child(named name: String) -> FileWrapper? {
        guard kind == .directory else { return nil }
        return lock.withLock {
            if let loadedChildren { return Self.key(named: name, in: loadedChildren).flatMap { loadedChildren[$0] } }
            if let overlaid = childOverlay[PathKey(name)] { return overlaid }
            guard let source, let child = readChild(named: name, of: source) else { return nil }
            childOverlay[PathKey(name)] = child
            return child
        }
    }

    /// Puts `child` under the key `name` (nil: removes what is there), without listing the
    /// directory when it has not been listed.
    @_spi(DocumentStore) public func replaceChild(named name: String, with child: FileWrapper?) {
        precondition(kind == .directory, "replaceChild(named:with:) on a FileWrapper that is not a directory")
        let old: FileWrapper? = lock.withLock {
            let old: FileWrapper?
            if var children = loadedChildren {
                let key = Self.key(named: name, in: children)
                old = key.flatMap { children[$0] }
                if let key { children[key] = nil }
                if let child { children[key ?? Self.uniqueKey(for: name, in: children)] = child }
                loadedChildren = children
            } else {
                old = childOverlay[PathKey(name)] ?? nil
                childOverlay[PathKey(name)] = .some(child)
            }
            return old
        }
        old?.parents.removeAll { $0.wrapper === self || $0.wrapper == nil }
        if let child {
            if child.preferredFilename == nil { child.preferredFilename = name }
            child.parents.append(WeakParent(wrapper: self))
        }
    }

    /// The key of the child whose name is `name`'s bytes: its key where that is the name itself,
    /// else the key a second spelling got (`uniqueKey`), also after the first spelling went. A
    /// dictionary of `String` finds a key equal by Unicode canonical equivalence, which may be
    /// another child's.
    static func key(named name: String, in children: [String: FileWrapper]) -> String? {
        if let index = children.index(forKey: name), FileSystemPath.same(children[index].key, name) { return children[index].key }
        return children.first { key, child in
            FileWrapperWriter.ownName(ifCollisionKey: key, of: child).map { FileSystemPath.same($0, name) } == true
        }?.key
    }

    // MARK: Reading

    /// Replaces the wrapper's content with the item at `url`; lazily unless `.immediate`.
    open func read(from url: URL, options: ReadingOptions = []) throws {
        let path = url.path
        let status: FileStatus
        do { status = try FileStatus.of(path: path) } catch { throw CocoaError.reading(error, url: url) }
        let newSource = Source(path: path, status: status, options: options)
        var newContents: Data?
        var newChildren: [String: FileWrapper]?
        var newDestination: String?
        let newKind: Kind
        switch status.kind {
        case .regular:
            newKind = .regularFile
            if options.contains(.immediate) {
                do { newContents = try Self.readContents(atPath: path, options: options) } catch { throw CocoaError.reading(error, url: url) }
            } else if !Paths.isReadable(path) {
                throw CocoaError.reading(SystemCallError.last("open", path: path), url: url)
            }
        case .directory:
            newKind = .directory
            if options.contains(.immediate) {
                var children: [String: FileWrapper] = [:]
                let names: [String]
                do { names = try FileIO.directoryEntries(path) } catch { throw CocoaError.reading(error, url: url) }
                for name in names {
                    let childURL = url.appendingPathComponent(name, isDirectory: false)
                    children[Self.uniqueKey(for: name, in: children)] = try FileWrapper(url: childURL, options: options)
                }
                newChildren = children
            }
        case .symbolicLink:
            newKind = .symbolicLink
            do { newDestination = try Paths.symbolicLinkTarget(path) } catch { throw CocoaError.reading(error, url: url) }
        case .other:
            throw CocoaError(.fileReadUnsupportedScheme, userInfo: [NSURLErrorKey: url, NSFilePathErrorKey: path])
        }
        lock.withLock {
            kind = newKind
            source = newSource
            loadedContents = newContents
            loadedChildren = newChildren
            childOverlay = [:]
            symbolicLinkDestination = newDestination
        }
        if let newChildren { for child in newChildren.values { child.parents.append(WeakParent(wrapper: self)) } }
        filename = url.lastPathComponent
        preferredFilename = url.lastPathComponent
        fileAttributes = Self.attributes(of: status)
    }

    /// Mapped when large, unless `.withoutMapping` (see `FileIO.contents`).
    static func readContents(atPath path: String, options: ReadingOptions) throws -> Data {
        let descriptor = try FileIO.open(path, O_RDONLY)
        defer { FileIO.close(descriptor) }
        let status = try FileStatus.of(descriptor: descriptor, path: path)
        return try FileIO.contents(of: descriptor, size: Int(status.size), mapping: !options.contains(.withoutMapping), path: path)
    }

    static func attributes(of status: FileStatus) -> [String: Any] {
        let type: FileAttributeType = switch status.kind {
        case .regular: .typeRegular
        case .directory: .typeDirectory
        case .symbolicLink: .typeSymbolicLink
        case .other: .typeUnknown
        }
        return [
            FileAttributeKey.type.rawValue: type,
            FileAttributeKey.size.rawValue: NSNumber(value: status.size),
            FileAttributeKey.posixPermissions.rawValue: NSNumber(value: status.permissions),
            FileAttributeKey.modificationDate.rawValue: status.modificationTime.date,
            FileAttributeKey.ownerAccountID.rawValue: NSNumber(value: status.userID),
            FileAttributeKey.groupOwnerAccountID.rawValue: NSNumber(value: status.groupID),
            FileAttributeKey.referenceCount.rawValue: NSNumber(value: status.linkCount),
            FileAttributeKey.systemFileNumber.rawValue: NSNumber(value: status.inode),
            FileAttributeKey.systemNumber.rawValue: NSNumber(value: status.device),
        ]
    }

    static func linkText(for url: URL) -> String {
        url.baseURL == nil ? url.path : url.relativePath
    }

    // MARK: Comparing

    /// Whether the item at `url` is the one this wrapper holds: same kind and structure, and for
    /// regular files the same modification date and size (not a byte comparison, as on Apple platforms).
    open func matchesContents(of url: URL) -> Bool {
        guard let status = try? FileStatus.of(path: url.path) else { return false }
        switch kind {
        case .regularFile:
            guard status.kind == .regular else { return false }
            if let source = lock.withLock({ loadedContents == nil ? source : nil }) ?? source {
                return source.status.modificationTime.date == status.modificationTime.date && source.status.size == status.size
            }
            guard let date = fileAttributes[FileAttributeKey.modificationDate.rawValue] as? Date else { return false }
            return date == status.modificationTime.date && Int64(regularFileContents?.count ?? -1) == status.size
        case .symbolicLink:
            guard status.kind == .symbolicLink else { return false }
            return (try? FileWrapper(url: url))?.symbolicLinkDestination == symbolicLinkDestination
        case .directory:
            guard status.kind == .directory, let children = fileWrappers,
                  let names = try? FileIO.directoryEntries(url.path)
            else { return false }
            let written = FileWrapperWriter.names(of: children)
            guard Set(names.map(PathKey.init)) == Set(written.map { PathKey($0.name) }) else { return false }
            return written.allSatisfy { _, name, child in
                child.matchesContents(of: url.appendingPathComponent(name, isDirectory: child.isDirectory))
            }
        }
    }

    // MARK: Writing

    /// Writes the wrapper to `url`. With `.atomic` the item is built beside the destination and
    /// moved into place in one step (a directory replaces an existing one with `RENAME_EXCHANGE`), so
    /// the destination always holds the old or the complete new item. Regular files unchanged since
    /// they were read from inside `originalContentsURL` are hard-linked instead of rewritten.
    open func write(to url: URL, options: WritingOptions = [], originalContentsURL: URL? = nil) throws {
        let destination = url.path
        let writer = FileWrapperWriter(
            originalPath: originalContentsURL?.path, updateNames: options.contains(.withNameUpdating),
            linkAnyUnchangedFile: options.contains(.linkingUnchangedFiles))
        do {
            if options.contains(.atomic) {
                let temporary = FileIO.temporarySibling(of: destination, tag: "write")
                do {
                    try writer.write(self, to: temporary)
                    try FileIO.replaceItem(at: destination, with: temporary)
                } catch {
                    try? FileIO.removeItem(temporary)
                    throw error
                }
            } else {
                try FileIO.removeItem(destination)
                try writer.write(self, to: destination)
            }
        } catch {
            throw CocoaError.writing(error, url: url)
        }
        writer.finish(self, at: destination)
        if options.contains(.withNameUpdating) { filename = url.lastPathComponent }
    }

    // MARK: Internal access for the writer and the archive

    var loadedChildrenIfAny: [String: FileWrapper]? { lock.withLock { loadedChildren } }
    var linkDestinationText: String? { symbolicLinkDestination }

    /// Whether the wrapper still stands for the unchanged file it was read from.
    var unchangedSource: Source? {
        lock.withLock {
            guard kind == .regularFile, let source else { return nil }
            return source
        }
    }

    func recordWritten(path: String, status: FileStatus) {
        lock.withLock {
            let options = source?.options ?? []
            source = Source(path: path, status: status, options: options)
        }
        fileAttributes.merge(Self.attributes(of: status)) { _, new in new }
    }

    func setKind(_ newKind: Kind, contents: Data?, children: [String: FileWrapper]?, destination: String?) {
        kind = newKind
        loadedContents = contents
        loadedChildren = children
        childOverlay = [:]
        symbolicLinkDestination = destination
        for child in children?.values ?? [:].values { child.parents.append(WeakParent(wrapper: self)) }
    }
}

/// Wrappers are equal only to themselves, as on Apple platforms (where `FileWrapper` is an
/// `NSObject`): `Set<FileWrapper>`, `$0.value != someWrapper`.
extension FileWrapper: Hashable {
    public static func == (lhs: FileWrapper, rhs: FileWrapper) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
