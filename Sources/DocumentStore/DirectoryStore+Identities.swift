import Glibc
import SystemSupport

/// Each item's number in the mount (see `ItemIdentities`): read with its status, carried over by
/// every save that replaces its file.
extension DirectoryStore {
    /// The status of the item `name` in `directory` (AT_FDCWD: `name` is a whole path), with its identity.
    func identifiedStatus(name: UnsafePointer<CChar>, in directory: Int32, path: String) throws -> FileStatus {
        var status = try FileStatus.of(name: name, in: directory, path: path)
        let target = AttributeTarget(name, in: directory)
        status.identity = identity(of: status, at: target)
        // The version archive's names are no names in the mount (and this one is).
        if status.linkCount > 1 && status.kind == .regular {
            status.linkCount = max(1, ArchivedLinks.storeNames(of: status, archived: ArchivedLinks.count(at: target)))
        }
        return status
    }

    /// The number the item at `target` is known by.
    func identity(of status: FileStatus, at target: AttributeTarget) -> UInt64 {
        guard let identities, let attribute = identities.attributeName else { return status.inode }
        // Only files and folders are ever replaced by a save; other items keep their own number.
        guard status.kind == .regular || status.kind == .directory else {
            return identities.ownsNumber(status.inode) ? status.inode : status.inode | ItemIdentities.transientBit
        }
        if let kept = NumberAttribute.read(at: target, name: attribute) { return kept }
        if identities.ownsNumber(status.inode) { return status.inode }
        // The file system gave this new item a number that another item carries: give it its own.
        if !isReadOnly, let fresh = identities.fresh() {
            if NumberAttribute.write(fresh, at: target, name: attribute, exclusive: true) { return fresh }
            if let kept = NumberAttribute.read(at: target, name: attribute) { return kept }
        }
        return status.inode | ItemIdentities.transientBit
    }

    /// The number of a listed entry: its stored number, or the file system's when it owns it; the
    /// whole status is taken only for an entry that needs a fresh number or of unknown kind.
    func listedIdentity(of name: FileName, kind: StoreDirectoryEntry.Kind, inode: UInt64, in directory: OwnedDescriptor) -> UInt64 {
        guard let identities, let attribute = identities.attributeName else { return inode }
        switch kind {
        case .regular, .directory:
            let kept = FileSystemPath.withCString(name.string) { name in
                NumberAttribute.read(at: AttributeTarget(name, in: directory.rawValue), name: attribute)
            }
            if let kept { return kept }
            if identities.ownsNumber(inode) { return inode }
        case .unknown:
            break
        default:
            return identities.ownsNumber(inode) ? inode : inode | ItemIdentities.transientBit
        }
        return (try? status(of: name, in: directory, folder: ""))?.identity ?? inode | ItemIdentities.transientBit
    }

    /// The number an item's successor carries: the item's own, or a fresh one when the item has
    /// other names (they keep the number; the saved name becomes a file of its own) or its number
    /// cannot be recorded as carried. Nil when identities are not kept.
    func identityToCarry(from existing: FileStatus, at full: String) -> UInt64? {
        guard let identities, let attribute = identities.attributeName else { return nil }
        // The version archive's names are no names in the mount.
        let otherNames = existing.linkCount > 1 ? max(1, ArchivedLinks.storeNames(of: existing, archived: ArchivedLinks.count(of: full))) - 1 : 0
        guard existing.kind == .directory || otherNames == 0 else { return identities.fresh() }
        return (try? AttributeTarget.at(full) { target -> UInt64? in
            if let kept = NumberAttribute.read(at: target, name: attribute) { return kept }
            guard identities.ownsNumber(existing.inode) else { return identities.fresh() }
            // The item keeps its number in the attribute too, so a lookup between here and the
            // install does not find its number carried, unclaimed, and give it a fresh one.
            _ = NumberAttribute.write(existing.inode, at: target, name: attribute, exclusive: true)
            return identities.recordCarried(existing.inode) ? existing.inode : identities.fresh()
        }) ?? nil
    }

    /// Gives the file open as `descriptor` the number `identity`.
    func assignIdentity(_ identity: UInt64?, to descriptor: Int32) {
        guard let identity, let attribute = identities?.attributeName else { return }
        NumberAttribute.write(identity, to: descriptor, name: attribute)
    }

    /// Gives a file DocFS just made a fresh number, so its first save has nothing to record.
    func assignFreshIdentity(to descriptor: Int32) {
        guard identities?.attributeName != nil else { return }
        assignIdentity(identities?.fresh(), to: descriptor)
    }

    /// Carries the numbers of a replaced folder's items to the folder replacing it (a package
    /// rewritten whole): each item of `replacement` that stands where an item of `original` stood,
    /// with a file of its own, takes that item's number. Items linked from the original are that
    /// item already.
    func carryIdentities(from original: String, to replacement: String) {
        guard identities?.attributeName != nil,
              let originalStatus = try? FileStatus.of(path: original), let replacementStatus = try? FileStatus.of(path: replacement),
              originalStatus.kind == replacementStatus.kind, originalStatus.inode != replacementStatus.inode
        else { return }
        if originalStatus.kind == .regular || originalStatus.kind == .directory {
            if let carried = identityToCarry(from: originalStatus, at: original), let attribute = identities?.attributeName {
                _ = try? AttributeTarget.at(replacement) { NumberAttribute.write(carried, at: $0, name: attribute, exclusive: false) }
            }
        }
        guard originalStatus.kind == .directory, let names = try? FileIO.directoryEntries(replacement) else { return }
        for name in names { carryIdentities(from: original + "/" + name, to: replacement + "/" + name) }
    }
}
