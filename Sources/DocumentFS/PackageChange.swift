import DocumentStore
import Glibc
import SystemSupport

/// A change to something inside a package, applied either to the stored package (a draft) or to a
/// private clone of it that is validated before it replaces the package.
enum PackageChange {
    /// A staged write to a member file, committed.
    case replaceFile(String, StagingFile)
    case createFile(String, mode: mode_t, owner: Ownership)
    case makeSpecialFile(String, mode: mode_t, device: dev_t, owner: Ownership)
    case makeDirectory(String, mode: mode_t, owner: Ownership)
    case makeSymbolicLink(String, target: String, owner: Ownership)
    case rename(String, to: String, flags: UInt32)
    case removeFile(String)
    case removeDirectory(String)

    /// Removals are never refused: a package that no longer decodes after one becomes a draft
    /// again, so `rm -r` of a package works.
    var isRemoval: Bool {
        switch self {
        case .removeFile, .removeDirectory: true
        default: false
        }
    }

    var isReplaceFile: Bool {
        if case .replaceFile = self { true } else { false }
    }

    /// The member the change is about, relative to the package root, for messages.
    var member: String {
        switch self {
        case .replaceFile(let member, _), .createFile(let member, _, _), .makeSpecialFile(let member, _, _, _), .makeDirectory(let member, _, _),
             .makeSymbolicLink(let member, _, _), .rename(_, let member, _), .removeFile(let member), .removeDirectory(let member):
            member
        }
    }

    /// Applies the change to the package whose root is the store path `base`. `publish` (see
    /// `Publication`) runs once the change is made: with the store's own step for a rename or a
    /// removal, so the names the caller moves with it change in the same step; after it otherwise.
    func apply(in base: String, store: any DocumentStore, publishing publish: Publication = { try $0() }) throws {
        func at(_ member: String) -> String { base + "/" + member }
        switch self {
        case .replaceFile(let member, let staging): try store.install(staging, at: at(member), durable: false)
        case .createFile(let member, let mode, let owner): try store.createEmptyFile(at(member), mode: mode, owner: owner)
        case .makeSpecialFile(let member, let mode, let device, let owner): try store.makeSpecialFile(at(member), mode: mode, device: device, owner: owner)
        case .makeDirectory(let member, let mode, let owner): try store.makeDirectory(at(member), mode: mode, owner: owner)
        case .makeSymbolicLink(let member, let target, let owner): try store.makeSymbolicLink(at(member), target: target, owner: owner)
        case .rename(let source, let destination, let flags): return try store.rename(at(source), to: at(destination), flags: flags, publishing: publish)
        case .removeFile(let member): return try store.removeFile(at(member), publishing: publish)
        case .removeDirectory(let member): return try store.removeDirectory(at(member), publishing: publish)
        }
        try publish {}
    }
}

/// Where a path sits relative to the package holding it.
struct PackageMember: Sendable {
    /// The package's store path.
    let root: String
    let claim: DocumentClaim
    /// The path inside the package.
    let member: String
}
