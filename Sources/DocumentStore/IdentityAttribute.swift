import Glibc
import SystemSupport

/// The identity attribute's value (see `ItemIdentities`): the number the item is known by, then
/// the file system's number of the file it was written on, each 8 bytes little-endian. A file that
/// got the attribute by being copied (`cp -a` run by root, `rsync -X`, a store restored from a
/// backup) is another file than the one it names: known by the number too, two items would be one
/// to every program that compares `st_ino` (`diff` and `cmp` call them the same file and compare
/// nothing; `cp` and `mv` refuse).
enum IdentityAttribute {
    enum Found: Equatable {
        case none
        /// Written on this file.
        case own(UInt64)
        /// Written by a DocFS that recorded no file (8 bytes): taken as the item's own.
        case unchecked(UInt64)
        /// Written on another file: this one is a copy of it (or was moved to another file system).
        case copied(UInt64)
    }

    /// What the attribute `name` of the item at `target`, the file system's number `inode`, holds.
    static func read(at target: AttributeTarget, name: String, inode: UInt64) -> Found {
        guard let (number, holder) = NumberAttribute.readPair(at: target, name: name) else { return .none }
        guard let holder else { return .unchecked(number) }
        return holder == inode ? .own(number) : .copied(number)
    }

    /// Sets the attribute of the item at `target`, the file `holder`; `exclusive`: only where it is
    /// absent. Whether it was set.
    @discardableResult
    static func write(_ number: UInt64, holder: UInt64, at target: AttributeTarget, name: String, exclusive: Bool) -> Bool {
        NumberAttribute.writePair(number, holder, at: target, name: name, exclusive: exclusive)
    }

    /// Sets the attribute of the open file `descriptor`, the file system's number `inode` (read
    /// where nil). Whether it was set.
    @discardableResult
    static func write(_ number: UInt64, to descriptor: Int32, inode: UInt64?, name: String) -> Bool {
        guard let holder = inode ?? (try? FileStatus.of(descriptor: descriptor, path: ""))?.inode else { return false }
        return NumberAttribute.writePair(number, holder, to: descriptor, name: name)
    }
}
