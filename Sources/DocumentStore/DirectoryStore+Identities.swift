import Glibc
import SystemSupport

/// Each item's number in the mount (see `ItemIdentities`): read with its status, carried over by
/// every save that replaces its file.
extension DirectoryStore {
    /// Fresh numbers are counted, never handed out twice; a file system's own are given again once
    /// their file is gone.
    public func identityIsNeverReused(_ identity: UInt64) -> Bool {
        identities?.attributeName != nil && identity >= ItemIdentities.freshBase && identity < ItemIdentities.transientBit
    }

    /// The status of the item `name` in `directory` (AT_FDCWD: `name` is a whole path), with its
    /// identity where `numbered` (else the file system's number); `document`: the item's path in
    /// the store.
    func identifiedStatus(name: UnsafePointer<CChar>, in directory: Int32, path: String, document: String, numbered: Bool = true) throws -> FileStatus {
        var status = try FileStatus.of(name: name, in: directory, path: path)
        let target = AttributeTarget(name, in: directory)
        if numbered { status.identity = identity(of: status, at: target, document: document) }
        // The version archive's names are no names in the mount (and this one is).
        if status.linkCount > 1 && status.kind == .regular {
            status.linkCount = max(1, ArchivedLinks.storeNames(of: status, archived: ArchivedLinks.count(at: target)))
        }
        return status
    }

    /// The number the item at `target`, the store's `document`, is known by.
    func identity(of status: FileStatus, at target: AttributeTarget, document: String) -> UInt64 {
        guard let identities, let attribute = identities.attributeName else { return status.inode }
        // Only files and folders are ever replaced by a save; other items keep their own number.
        guard status.kind == .regular || status.kind == .directory else {
            return identities.ownsNumber(status.inode) ? status.inode : status.inode | ItemIdentities.transientBit
        }
        switch IdentityAttribute.read(at: target, name: attribute, inode: status.inode) {
        case .own(let number):
            return number
        case .unchecked(let number):
            // Written by an earlier DocFS: from now on the number names its file, so a copy of it
            // made later is told apart.
            if !isReadOnly { IdentityAttribute.write(number, holder: status.inode, at: target, name: attribute, exclusive: false) }
            return number
        case .copied(let number):
            return renumberCopy(of: number, status: status, at: target, document: document, attribute: attribute)
        case .none:
            break
        }
        if identities.ownsNumber(status.inode) { return status.inode }
        // The file system gave this new item a number that another item carries: give it its own.
        if !isReadOnly, let fresh = identities.fresh() {
            if IdentityAttribute.write(fresh, holder: status.inode, at: target, name: attribute, exclusive: true) { return fresh }
            if case .own(let kept) = IdentityAttribute.read(at: target, name: attribute, inode: status.inode) { return kept }
        }
        return status.inode | ItemIdentities.transientBit
    }

    /// The number of an item whose attribute was copied from another file's (`number`, that
    /// file's): a fresh one, written over the copied one. `number`'s history goes on under the
    /// fresh number where the item is that document moved to another file system (a store restored
    /// from a backup, a document moved out and back), not a copy beside it (see
    /// `VersionArchive.historyRenumbered`).
    private func renumberCopy(of number: UInt64, status: FileStatus, at target: AttributeTarget, document: String, attribute: String) -> UInt64 {
        guard !isReadOnly, let identities else { return status.inode | ItemIdentities.transientBit }
        let renumbered = identities.renumbering { () -> (UInt64, Bool)? in
            // Another thread may have renumbered it first: its number stands.
            switch IdentityAttribute.read(at: target, name: attribute, inode: status.inode) {
            case .own(let kept): return (kept, false)
            case .copied(let copied) where copied == number:
                guard let fresh = identities.fresh(), IdentityAttribute.write(fresh, holder: status.inode, at: target, name: attribute, exclusive: false) else { return nil }
                return (fresh, true)
            default: return nil
            }
        }
        guard let (fresh, changed) = renumbered else { return status.inode | ItemIdentities.transientBit }
        if changed, keysHistoriesByNumber { versions?.historyRenumbered(at: document, from: number, to: .init(value: fresh, travels: true)) }
        return fresh
    }

    /// The number of a listed entry: its stored number, or the file system's when it owns it; the
    /// whole status is taken only for an entry that needs a fresh number or of unknown kind.
    func listedIdentity(of name: FileName, kind: StoreDirectoryEntry.Kind, inode: UInt64, in directory: OwnedDescriptor, folder: String) -> UInt64 {
        guard let identities, let attribute = identities.attributeName else { return inode }
        switch kind {
        case .regular, .directory:
            let kept = FileSystemPath.withCString(name.string) { name in
                IdentityAttribute.read(at: AttributeTarget(name, in: directory.rawValue), name: attribute, inode: inode)
            }
            if case .own(let number) = kept { return number }
            if kept == .none, identities.ownsNumber(inode) { return inode }
        case .unknown:
            break
        default:
            return identities.ownsNumber(inode) ? inode : inode | ItemIdentities.transientBit
        }
        // An entry to be numbered, or whose attribute is to be brought up to date: as a lookup does.
        return (try? status(of: name, in: directory, folder: folder))?.identity ?? inode | ItemIdentities.transientBit
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
            switch IdentityAttribute.read(at: target, name: attribute, inode: existing.inode) {
            case .own(let kept), .unchecked(let kept): return kept
            // A copy's number is its original's: the copy's successor takes one of its own.
            case .copied: return identities.fresh()
            case .none: break
            }
            guard identities.ownsNumber(existing.inode) else { return identities.fresh() }
            // The item keeps its number in the attribute too, so a lookup between here and the
            // install does not find its number carried, unclaimed, and give it a fresh one.
            _ = IdentityAttribute.write(existing.inode, holder: existing.inode, at: target, name: attribute, exclusive: true)
            return identities.recordCarried(existing.inode) ? existing.inode : identities.fresh()
        }) ?? nil
    }

    /// Gives the file open as `descriptor` (the file system's number `inode`, where known) the
    /// number `identity`.
    func assignIdentity(_ identity: UInt64?, to descriptor: Int32, inode: UInt64? = nil) {
        guard let identity, let attribute = identities?.attributeName else { return }
        IdentityAttribute.write(identity, to: descriptor, inode: inode, name: attribute)
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
                _ = try? AttributeTarget.at(replacement) {
                    IdentityAttribute.write(carried, holder: replacementStatus.inode, at: $0, name: attribute, exclusive: false)
                }
            }
        }
        guard originalStatus.kind == .directory, let names = try? FileIO.directoryEntries(replacement) else { return }
        for name in names { carryIdentities(from: original + "/" + name, to: replacement + "/" + name) }
    }
}
