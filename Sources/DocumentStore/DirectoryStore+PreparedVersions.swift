import Foundation
import Glibc
import SystemSupport

/// A package's next version, made ahead. Keeping a package's version whole makes a folder for each
/// of its folders and links each file: a few hundred microseconds that doubled as the time of a
/// small save in a package. So after each save the folder of links is made on a thread of its own
/// (`prepareVersion`), and the next save only checks that it is still exactly what a link copy
/// would make now — the same names, the same files (inode numbers), the same folder modes, owners,
/// times and attributes, the same link targets — and renames it into the archive. Items that came
/// since, and changed nothing else (a file made and first written, a folder made: changes that
/// prepare nothing, so a save by rename inside the package prepares once), are put in then, as the
/// copy puts them. Anything else (not ready, or the package changed since, through DocFS or beside
/// it) takes the copy as before.
extension DirectoryStore {
    /// The most packages with a prepared version at once; the least recently prepared goes first.
    static let preparedVersionLimit = 64

    /// Makes the next version of the package at `path` ahead, on the preparing thread. Nothing for
    /// a file, or a package whose versions are kept member by member.
    public func prepareVersion(of path: String) {
        guard keepsVersions, let preparedDirectory else { return }
        guard (try? FileStatus.of(path: absolute(path)))?.kind == .directory else {
            // Gone (removed, renamed): what was made for it would keep its files on disk.
            discardPrepared(of: path)
            return
        }
        let request = preparationRequests.withLock { requests in
            defer { requests.next += 1 }
            requests.latest[PathKey(path)] = requests.next
            return requests.next
        }
        preparing.async { [self] in
            defer { preparationRequests.withLock { if $0.latest[PathKey(path)] == request { $0.latest[PathKey(path)] = nil } } }
            // A later change to the package asked again: that request makes it.
            guard preparationRequests.withLock({ $0.latest[PathKey(path)] == request }) else { return }
            discardPrepared(of: path)
            guard keepsWholeVersion(ofPackage: path), let status = try? FileStatus.of(path: absolute(path)), status.kind == .directory else { return }
            let location = preparedDirectory + "/" + uniqueName("version")
            guard (try? linkCopy(ofFolder: absolute(path), status: status, to: location)) != nil else { return }
            let evicted = preparedVersions.withLock { prepared -> [String] in
                prepared.append((path, location))
                let excess = max(0, prepared.count - Self.preparedVersionLimit)
                defer { prepared.removeFirst(excess) }
                return prepared.prefix(excess).map(\.location)
            }
            for old in evicted { Self.removePrepared(old) }
        }
    }

    /// The version prepared for the package at `path`, if it is still exactly the package's
    /// content, or that content before items came (put in now): taken (whichever way), so it is
    /// used once.
    func takePreparedVersion(of path: String) -> String? {
        // One is being made (saves come faster than it is made): waited for, it is most of the way.
        if preparationRequests.withLock({ $0.latest[PathKey(path)] != nil }) { preparing.sync {} }
        let location = preparedVersions.withLock { prepared -> String? in
            guard let index = prepared.lastIndex(where: { FileSystemPath.same($0.path, path) }) else { return nil }
            return prepared.remove(at: index).location
        }
        guard let location else { return nil }
        let live = absolute(path)
        if let arrivals = arrivals(since: location, live: live), (try? complete(location, with: arrivals, from: live)) != nil { return location }
        Self.removePrepared(location)
        return nil
    }

    private func discardPrepared(of path: String) {
        let locations = preparedVersions.withLock { prepared -> [String] in
            let matching = prepared.filter { FileSystemPath.same($0.path, path) }.map(\.location)
            prepared.removeAll { FileSystemPath.same($0.path, path) }
            return matching
        }
        for location in locations { Self.removePrepared(location) }
    }

    /// Removes a prepared version, lowering its files' archived-link counts first.
    static func removePrepared(_ location: String) {
        VersionArchive.releaseLinks(at: location)
        try? FileIO.removeItem(location)
    }

    /// Removes what a daemon that ended left prepared.
    func removeLeftoverPreparedVersions() {
        guard let preparedDirectory else { return }
        for name in (try? FileIO.directoryEntries(preparedDirectory)) ?? [] { Self.removePrepared(preparedDirectory + "/" + name) }
    }

    /// An item of a live package that its prepared version lacks: the folder it is in (names below
    /// the package), and its name and listed type.
    private struct Arrival {
        var folder: [String]
        var name: String
        var type: UInt8
    }

    /// The items of the folder at `live` that the version prepared at `prepared` lacks, if it is
    /// otherwise exactly what a link copy of that folder makes now; nil if not.
    private func arrivals(since prepared: String, live: String) -> [Arrival]? {
        guard let preparedFolder = try? OwnedDescriptor(FileIO.open(prepared, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)),
              let liveFolder = try? OwnedDescriptor(FileIO.open(live, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
        else { return nil }
        return arrivals(prepared: preparedFolder, live: liveFolder, path: live, folder: [])
    }

    private func arrivals(prepared: OwnedDescriptor, live: OwnedDescriptor, path: String, folder: [String]) -> [Arrival]? {
        guard let made = try? prepared.status(), let now = try? live.status(),
              made.permissions == now.permissions, made.userID == now.userID, made.groupID == now.groupID,
              sameAttributes(prepared, live),
              let madeEntries = try? FileIO.listing(of: prepared.rawValue, path: path),
              let nowEntries = try? FileIO.listing(of: live.rawValue, path: path)
        else { return nil }
        let madeByName = Dictionary(madeEntries.map { (PathKey($0.name), $0) }, uniquingKeysWith: { first, _ in first })
        var arrived = nowEntries.filter { madeByName[PathKey($0.name)] == nil }.map { Arrival(folder: folder, name: $0.name, type: $0.type) }
        let arrivedHere = arrived.count
        // Both listed on one file system that lists items' own numbers, in a folder nothing came
        // into: a file listed with the same number in both is the same file (a package of 200 files
        // took 400 calls to say so). Where something came, each file is looked at: a listing torn
        // by a rename beside the mount may show a file under its old name and its new one, and the
        // old name is then found gone.
        let listingsSuffice = listsItsInodes && made.device == now.device && arrivedHere == 0
        for entry in nowEntries {
            guard let copy = madeByName[PathKey(entry.name)] else { continue }
            if listingsSuffice, entry.type == UInt8(DT_REG), copy.type == UInt8(DT_REG) {
                guard copy.inode == entry.inode else { return nil }
                continue
            }
            let below = FileSystemPath.withCString(entry.name) { name -> [Arrival]? in
                var liveStatus = stat()
                var copyStatus = stat()
                guard fstatat(live.rawValue, name, &liveStatus, AT_SYMLINK_NOFOLLOW) == 0,
                      fstatat(prepared.rawValue, name, &copyStatus, AT_SYMLINK_NOFOLLOW) == 0,
                      liveStatus.st_mode & S_IFMT == copyStatus.st_mode & S_IFMT
                else { return nil }
                switch liveStatus.st_mode & S_IFMT {
                case S_IFDIR:
                    let liveChild = openat(live.rawValue, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    let copyChild = openat(prepared.rawValue, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    guard liveChild >= 0, copyChild >= 0 else {
                        if liveChild >= 0 { close(liveChild) }
                        if copyChild >= 0 { close(copyChild) }
                        return nil
                    }
                    return arrivals(prepared: OwnedDescriptor(copyChild), live: OwnedDescriptor(liveChild), path: path + "/" + entry.name, folder: folder + [entry.name])
                case S_IFLNK:
                    let same = liveStatus.st_uid == copyStatus.st_uid && liveStatus.st_gid == copyStatus.st_gid
                        && Self.linkTarget(name, in: live.rawValue) == Self.linkTarget(name, in: prepared.rawValue)
                    return same ? [] : nil
                default:
                    // Files are linked: the same file is the same content, mode, owner and attributes.
                    let same = liveStatus.st_ino == copyStatus.st_ino && liveStatus.st_dev == copyStatus.st_dev && copy.inode == entry.inode
                    return same ? [] : nil
                }
            }
            guard let below else { return nil }
            arrived += below
        }
        // Every item of the version is still here (each name of the folder's now matched one of
        // its at most once), and the folder's time is the one copied unless something came in.
        guard madeEntries.count + arrivedHere == nowEntries.count,
              arrivedHere > 0
                || (made.modificationTime.tv_sec == now.modificationTime.tv_sec && made.modificationTime.tv_nsec == now.modificationTime.tv_nsec)
        else { return nil }
        return arrived
    }

    /// Puts `arrivals` into the version prepared at `location` of the package at `live` as a link
    /// copy puts them, and gives the folders they came into their times now.
    private func complete(_ location: String, with arrivals: [Arrival], from live: String) throws {
        var current: (below: String, source: OwnedDescriptor, target: OwnedDescriptor)?
        func finish() throws {
            guard let current else { return }
            giveAttributes(of: try current.source.status(path: live + current.below), to: current.target.rawValue, always: false)
        }
        for arrival in arrivals {
            let below = arrival.folder.map { "/" + $0 }.joined()
            if current == nil || !FileSystemPath.same(current?.below ?? "", below) {
                try finish()
                current = (
                    below,
                    OwnedDescriptor(try FileIO.open(live + below, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)),
                    OwnedDescriptor(try FileIO.open(location + below, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
                )
            }
            guard let current else { continue }
            try linkCopy(entry: arrival.name, type: arrival.type, of: current.source, into: current.target, path: live + below)
        }
        try finish()
    }

    /// Whether two folders have the same extended attributes (the item's number aside: a copy has none).
    private func sameAttributes(_ prepared: OwnedDescriptor, _ live: OwnedDescriptor) -> Bool {
        guard let madeNames = try? prepared.extendedAttributeNames(), let nowNames = try? live.extendedAttributeNames() else { return false }
        let kept = Set(nowNames.filter { $0 != identities?.attributeName }.map(PathKey.init))
        guard Set(madeNames.map(PathKey.init)) == kept else { return false }
        return kept.allSatisfy { name in (try? prepared.extendedAttribute(name.path)) == (try? live.extendedAttribute(name.path)) }
    }

    private static func linkTarget(_ name: UnsafePointer<CChar>, in directory: Int32) -> [CChar]? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlinkat(directory, name, &buffer, buffer.count - 1)
        return length < 0 ? nil : Array(buffer[..<length])
    }
}
