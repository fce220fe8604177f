import CSystemShims
import Glibc

/// An item named for extended attribute calls: the descriptor of its folder and its name there
/// (`AT_FDCWD`: `name` is a whole path). A link at the name is never followed. Extended attribute
/// calls by path would walk procfs (`/proc/self/fd/N/name`) for every item beneath a held folder;
/// these name it as the `*at` calls do (see `docfs_getxattrat`). Used only inside the call that
/// lent `name` (`FileSystemPath.at`, `withCString`): it borrows the pointer, it does not keep it.
public struct AttributeTarget {
    public let directory: Int32
    public let name: UnsafePointer<CChar>

    public init(_ name: UnsafePointer<CChar>, in directory: Int32) {
        self.directory = directory
        self.name = name
    }

    /// Calls `body` with the item at `path`, resolved beneath the store as every path is (see
    /// `ConfinedTree`).
    @discardableResult
    public static func at<T>(_ path: String, _ body: (AttributeTarget) throws -> T) throws -> T {
        try FileSystemPath.at(path) { directory, name in try body(AttributeTarget(name, in: directory)) }
    }

    /// getxattr: the value's length, or -1 with errno set.
    public func read(_ attribute: UnsafePointer<CChar>, into value: UnsafeMutableRawPointer?, size: Int) -> Int {
        docfs_getxattrat(directory, name, attribute, value, size)
    }

    /// setxattr: 0, or -1 with errno set.
    public func write(_ attribute: UnsafePointer<CChar>, from value: UnsafeRawPointer?, size: Int, flags: Int32) -> Int32 {
        docfs_setxattrat(directory, name, attribute, value, size, flags)
    }

    /// listxattr: the list's length, or -1 with errno set.
    public func list(into names: UnsafeMutableRawPointer?, size: Int) -> Int {
        docfs_listxattrat(directory, name, names?.assumingMemoryBound(to: CChar.self), size)
    }

    /// removexattr: 0, or -1 with errno set.
    public func remove(_ attribute: UnsafePointer<CChar>) -> Int32 {
        docfs_removexattrat(directory, name, attribute)
    }
}
