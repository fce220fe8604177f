import CSystemShims
import Glibc

/// A 64-bit number kept in an extended attribute, little-endian. No allocation: these calls are on
/// the lookup path.
public enum NumberAttribute {
    /// setxattr's XATTR_CREATE, which Glibc's module does not export.
    private static let createOnly: Int32 = 1

    /// The number the attribute holds; nil when it is absent, not 8 bytes, or 0 (which `readdir`
    /// callers skip).
    public static func read(at target: AttributeTarget, name: String) -> UInt64? {
        var value: UInt64 = 0
        return number(read: name.withCString { target.read($0, into: &value, size: MemoryLayout<UInt64>.size) }, value)
    }

    /// The number the attribute of an open file holds; nil as for `read(at:name:)`.
    public static func read(from descriptor: Int32, name: String) -> UInt64? {
        var value: UInt64 = 0
        return number(read: name.withCString { fgetxattr(descriptor, $0, &value, MemoryLayout<UInt64>.size) }, value)
    }

    /// What a read of `read` bytes into `value` found.
    private static func number(read: Int, _ value: UInt64) -> UInt64? {
        let number = UInt64(littleEndian: value)
        return read == MemoryLayout<UInt64>.size && number != 0 ? number : nil
    }

    /// Sets the attribute; `exclusive`: only where it is absent. Whether it was set.
    @discardableResult
    public static func write(_ number: UInt64, at target: AttributeTarget, name: String, exclusive: Bool) -> Bool {
        var value = number.littleEndian
        return name.withCString { target.write($0, from: &value, size: MemoryLayout<UInt64>.size, flags: exclusive ? createOnly : 0) == 0 }
    }

    /// Sets the attribute on an open file. Whether it was set.
    @discardableResult
    public static func write(_ number: UInt64, to descriptor: Int32, name: String) -> Bool {
        var value = number.littleEndian
        return name.withCString { fsetxattr(descriptor, $0, &value, MemoryLayout<UInt64>.size, 0) == 0 }
    }

    /// The number and the second number (nil where only one is there, 8 bytes) the attribute
    /// holds; nil when it is absent, of another length, or its number is 0.
    public static func readPair(at target: AttributeTarget, name: String) -> (UInt64, UInt64?)? {
        var value: (UInt64, UInt64) = (0, 0)
        let read = withUnsafeMutableBytes(of: &value) { bytes in name.withCString { target.read($0, into: bytes.baseAddress, size: bytes.count) } }
        let number = UInt64(littleEndian: value.0)
        guard number != 0 else { return nil }
        switch read {
        case MemoryLayout<UInt64>.size: return (number, nil)
        case 2 * MemoryLayout<UInt64>.size: return (number, UInt64(littleEndian: value.1))
        default: return nil
        }
    }

    /// Sets the attribute to two numbers; `exclusive`: only where it is absent. Whether it was set.
    @discardableResult
    public static func writePair(_ number: UInt64, _ second: UInt64, at target: AttributeTarget, name: String, exclusive: Bool) -> Bool {
        var value = (number.littleEndian, second.littleEndian)
        return withUnsafeBytes(of: &value) { bytes in
            name.withCString { target.write($0, from: bytes.baseAddress, size: bytes.count, flags: exclusive ? createOnly : 0) == 0 }
        }
    }

    /// Sets the attribute of an open file to two numbers. Whether it was set.
    @discardableResult
    public static func writePair(_ number: UInt64, _ second: UInt64, to descriptor: Int32, name: String) -> Bool {
        var value = (number.littleEndian, second.littleEndian)
        return withUnsafeBytes(of: &value) { bytes in name.withCString { fsetxattr(descriptor, $0, bytes.baseAddress, bytes.count, 0) == 0 } }
    }
}
