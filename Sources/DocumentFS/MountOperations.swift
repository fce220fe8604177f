import DocumentStore
import FUSE
import Glibc

/// What the kernel talks to: the document file system, inside the private area's name the
/// read-only quarantine view, and under `.versions` the documents' earlier versions. Each request
/// goes to the one whose inode it names; everything that would change a view is refused with
/// EROFS (but removing a version, by its owner).
final class MountOperations: FileSystemOperations {
    let documents: DocumentFileSystem
    let quarantine: QuarantineView
    /// Nil where the store keeps no versions (`--versions off`, a PostgreSQL store).
    let versions: VersionsView?

    init(documents: DocumentFileSystem) {
        self.documents = documents
        self.quarantine = QuarantineView(store: documents.store)
        let store = documents.store
        self.versions = store.versions.flatMap { archive in
            (store as? DirectoryStore)?.keepsVersions == false ? nil : VersionsView(store: store, archive: archive, notifier: documents.notifier)
        }
    }

    /// Runs `change` (a request that may move who may enter a document's versions), then tells the
    /// versions view, which lets the kernel cache its attributes, about each of `paths`.
    /// Told even when `change` fails: part of it may have been made (a chmod before a failed chown).
    private func changing<T>(_ paths: [String?], _ change: () throws(FUSEError) -> T) throws(FUSEError) -> T {
        defer { if let versions { for case let path? in paths { versions.documentChanged(at: path) } } }
        return try change()
    }

    /// Paths are worked out only while the kernel holds something of the view: every create,
    /// unlink and setattr comes here.
    private func path(_ parent: Inode, _ name: FileName) -> String? {
        versions?.isBrowsed == true ? try? documents.childPath(parent: parent, name: name) : nil
    }

    /// Every path of `inode`: a chmod through one hard link changes who may read all of them.
    private func paths(_ inode: Inode) -> [String?] {
        versions?.isBrowsed == true ? documents.nodes.paths(of: inode) : []
    }

    private func isView(_ inode: Inode) -> Bool { QuarantineView.owns(inode) || VersionsView.owns(inode) }

    /// The versions view, for an inode of it.
    private func versionsView(_ inode: Inode) -> VersionsView? { VersionsView.owns(inode) ? versions : nil }

    private func refuseInView(_ inodes: Inode...) throws(FUSEError) {
        if inodes.contains(where: isView) { throw .readOnlyFileSystem }
    }

    /// `.versions` at the root is the view's name: nothing new can take it.
    private func refuseViewName(_ parent: Inode, _ name: FileName) throws(FUSEError) {
        if parent == .root && name == VersionsView.name && versions != nil { throw .exists }
    }

    func initialize(connection: inout ConnectionSettings) { documents.initialize(connection: &connection) }
    func destroy() { documents.destroy() }

    func lookup(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) -> Entry {
        if let versions = versionsView(parent) { return try versions.lookup(parent: parent, name: name) }
        if isView(parent) { return try quarantine.lookup(parent: parent, name: name, context: context) }
        if parent == .root && name == QuarantineView.privateArea { return try quarantine.lookupPrivateArea(context: context) }
        if parent == .root && name == VersionsView.name, let versions { return try versions.lookupRoot() }
        return try documents.lookup(parent: parent, name: name, context: context)
    }

    func lookup(_ entry: RelativeEntry, in directory: Inode, context: RequestContext) throws(FUSEError) -> Entry {
        guard isView(directory) else { return try documents.lookup(entry, in: directory, context: context) }
        if let versions = versionsView(directory) {
            if let found = try versions.lookup(entry, in: directory) { return found }
        } else if let found = try quarantine.lookup(entry, in: directory, context: context) {
            return found
        }
        return try documents.lookup(.current, in: .root, context: context)
    }

    func forget(inode: Inode, count: UInt64) {
        if let versions = versionsView(inode) {
            versions.forget(inode, count: count)
        } else if isView(inode) {
            quarantine.forget(inode, count: count)
        } else {
            documents.forget(inode: inode, count: count)
        }
    }

    func getAttributes(inode: Inode, handle: UInt64?, context: RequestContext) throws(FUSEError) -> AttributesReply {
        if let versions = versionsView(inode) { return try versions.attributes(of: inode) }
        if isView(inode) { return try quarantine.attributes(of: inode, context: context) }
        return try documents.getAttributes(inode: inode, handle: handle, context: context)
    }

    func setAttributes(inode: Inode, changes: AttributeChanges, handle: UInt64?, context: RequestContext) throws(FUSEError) -> AttributesReply {
        try refuseInView(inode)
        return try changing(paths(inode)) { () throws(FUSEError) in
            try documents.setAttributes(inode: inode, changes: changes, handle: handle, context: context)
        }
    }

    func readLink(inode: Inode) throws(FUSEError) -> String {
        if let versions = versionsView(inode) { return try versions.readLink(inode) }
        if isView(inode) { return try quarantine.readLink(inode) }
        return try documents.readLink(inode: inode)
    }

    func makeNode(parent: Inode, name: FileName, mode: mode_t, device: dev_t, context: RequestContext) throws(FUSEError) -> Entry {
        try refuseInView(parent)
        try refuseViewName(parent, name)
        return try changing([path(parent, name)]) { () throws(FUSEError) in
            try documents.makeNode(parent: parent, name: name, mode: mode, device: device, context: context)
        }
    }

    func makeDirectory(parent: Inode, name: FileName, mode: mode_t, context: RequestContext) throws(FUSEError) -> Entry {
        try refuseInView(parent)
        try refuseViewName(parent, name)
        return try changing([path(parent, name)]) { () throws(FUSEError) in
            try documents.makeDirectory(parent: parent, name: name, mode: mode, context: context)
        }
    }

    func unlink(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) {
        if let versions = versionsView(parent) { return try versions.remove(parent: parent, name: name, directory: false, context: context) }
        try refuseInView(parent)
        try changing([path(parent, name)]) { () throws(FUSEError) in try documents.unlink(parent: parent, name: name, context: context) }
    }

    func removeDirectory(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) {
        if let versions = versionsView(parent) { return try versions.remove(parent: parent, name: name, directory: true, context: context) }
        try refuseInView(parent)
        try changing([path(parent, name)]) { () throws(FUSEError) in try documents.removeDirectory(parent: parent, name: name, context: context) }
    }

    func symlink(target: String, parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) -> Entry {
        try refuseInView(parent)
        try refuseViewName(parent, name)
        return try changing([path(parent, name)]) { () throws(FUSEError) in
            try documents.symlink(target: target, parent: parent, name: name, context: context)
        }
    }

    func rename(parent: Inode, name: FileName, newParent: Inode, newName: FileName, flags: UInt32, context: RequestContext) throws(FUSEError) {
        try refuseInView(parent, newParent)
        try refuseViewName(newParent, newName)
        try changing([path(parent, name), path(newParent, newName)]) { () throws(FUSEError) in
            try documents.rename(parent: parent, name: name, newParent: newParent, newName: newName, flags: flags, context: context)
        }
    }

    func link(inode: Inode, newParent: Inode, newName: FileName, context: RequestContext) throws(FUSEError) -> Entry {
        try refuseInView(inode, newParent)
        try refuseViewName(newParent, newName)
        return try changing([path(newParent, newName)]) { () throws(FUSEError) in
            try documents.link(inode: inode, newParent: newParent, newName: newName, context: context)
        }
    }

    func open(inode: Inode, flags: Int32, context: RequestContext) throws(FUSEError) -> OpenReply {
        if let versions = versionsView(inode) { return try versions.open(inode, flags: flags) }
        if isView(inode) { return try quarantine.open(inode, flags: flags, context: context) }
        return try documents.open(inode: inode, flags: flags, context: context)
    }

    func create(parent: Inode, name: FileName, mode: mode_t, flags: Int32, context: RequestContext) throws(FUSEError) -> (Entry, OpenReply) {
        try refuseInView(parent)
        try refuseViewName(parent, name)
        return try changing([path(parent, name)]) { () throws(FUSEError) in
            try documents.create(parent: parent, name: name, mode: mode, flags: flags, context: context)
        }
    }

    func read(inode: Inode, handle: UInt64, offset: Int64, size: Int) throws(FUSEError) -> ReadReply {
        if let versions = versionsView(inode) { return try versions.read(handle: handle, offset: offset, size: size) }
        if isView(inode) { return try quarantine.read(handle: handle, offset: offset, size: size) }
        return try documents.read(inode: inode, handle: handle, offset: offset, size: size)
    }

    func write(inode: Inode, handle: UInt64, bytes: UnsafeRawBufferPointer, offset: Int64, context: RequestContext) throws(FUSEError) -> Int {
        if isView(inode) { throw .badHandle }
        return try documents.write(inode: inode, handle: handle, bytes: bytes, offset: offset, context: context)
    }

    func flush(inode: Inode, handle: UInt64, context: RequestContext) throws(FUSEError) {
        if isView(inode) { return }
        try documents.flush(inode: inode, handle: handle, context: context)
    }

    func release(inode: Inode, handle: UInt64, flags: Int32) {
        if let versions = versionsView(inode) {
            versions.release(handle: handle)
        } else if isView(inode) {
            quarantine.release(handle: handle)
        } else {
            documents.release(inode: inode, handle: handle, flags: flags)
        }
    }

    func fsync(inode: Inode, handle: UInt64, dataOnly: Bool) throws(FUSEError) {
        if isView(inode) { return }
        try documents.fsync(inode: inode, handle: handle, dataOnly: dataOnly)
    }

    func allocate(inode: Inode, handle: UInt64, mode: Int32, offset: Int64, length: Int64, context: RequestContext) throws(FUSEError) {
        try refuseInView(inode)
        try documents.allocate(inode: inode, handle: handle, mode: mode, offset: offset, length: length, context: context)
    }

    func openDirectory(inode: Inode, flags: Int32, context: RequestContext) throws(FUSEError) -> OpenReply {
        if let versions = versionsView(inode) { return try versions.openDirectory(inode) }
        if isView(inode) { return try quarantine.openDirectory(inode, context: context) }
        return try documents.openDirectory(inode: inode, flags: flags, context: context)
    }

    func readDirectory(inode: Inode, handle: UInt64, offset: Int64, plus: Bool, add: (DirectoryEntry) -> Bool) throws(FUSEError) {
        if let versions = versionsView(inode) { return try versions.readDirectory(inode: inode, handle: handle, offset: offset, plus: plus, add: add) }
        if isView(inode) { return try quarantine.readDirectory(handle: handle, offset: offset, add: add) }
        try documents.readDirectory(inode: inode, handle: handle, offset: offset, plus: plus, add: add)
    }

    func releaseDirectory(inode: Inode, handle: UInt64) {
        if let versions = versionsView(inode) {
            versions.releaseDirectory(handle: handle)
        } else if isView(inode) {
            quarantine.releaseDirectory(handle: handle)
        } else {
            documents.releaseDirectory(inode: inode, handle: handle)
        }
    }

    func fsyncDirectory(inode: Inode, handle: UInt64, dataOnly: Bool) throws(FUSEError) {
        if isView(inode) { return }
        try documents.fsyncDirectory(inode: inode, handle: handle, dataOnly: dataOnly)
    }

    func statistics(inode: Inode) throws(FUSEError) -> FileSystemStatistics {
        try documents.statistics(inode: isView(inode) ? .root : inode)
    }

    func access(inode: Inode, mask: Int32, context: RequestContext) throws(FUSEError) {
        guard isView(inode) else { return try documents.access(inode: inode, mask: mask, context: context) }
        if mask & W_OK != 0 { throw .readOnlyFileSystem }
        if let versions = versionsView(inode) {
            _ = try versions.attributes(of: inode)
        } else {
            _ = try quarantine.attributes(of: inode, context: context)
        }
    }

    func setExtendedAttribute(inode: Inode, name: String, value: UnsafeRawBufferPointer, flags: Int32, context: RequestContext) throws(FUSEError) {
        try refuseInView(inode)
        // An ACL decides who may enter a document's versions.
        try changing(paths(inode)) { () throws(FUSEError) in
            try documents.setExtendedAttribute(inode: inode, name: name, value: value, flags: flags, context: context)
        }
    }

    func extendedAttribute(inode: Inode, name: String, context: RequestContext) throws(FUSEError) -> [UInt8] {
        if let versions = versionsView(inode) { return try versions.extendedAttribute(of: inode, name: name) }
        if isView(inode) { throw .noAttribute }
        return try documents.extendedAttribute(inode: inode, name: name, context: context)
    }

    func extendedAttributeNames(inode: Inode, context: RequestContext) throws(FUSEError) -> [UInt8] {
        if let versions = versionsView(inode) { return try versions.extendedAttributeNames(of: inode) }
        if isView(inode) { return [] }
        return try documents.extendedAttributeNames(inode: inode, context: context)
    }

    func removeExtendedAttribute(inode: Inode, name: String, context: RequestContext) throws(FUSEError) {
        try refuseInView(inode)
        try changing(paths(inode)) { () throws(FUSEError) in try documents.removeExtendedAttribute(inode: inode, name: name, context: context) }
    }
}
