import Foundation
import Glibc

/// The name of a document's earlier version in a DocFS mount's `.versions`: its save time in UTC
/// to the microsecond, sortable as text, then the document's extension (`20261125T140841.123456Z.md`).
/// Shared by the store that makes the names and the document API that reads them.
public enum VersionName {
    /// The attribute a version shows in a mount's `.versions`, by name only: the uid that saved it.
    public static let savedByAttribute = "user.docfs.saved-by"

    /// How many bytes the time takes at the start of a name.
    public static let timeLength = 23

    /// `20261125T140841.123456Z` for a time in microseconds since the epoch; a time outside years
    /// 1970 to 9999 (a file's mtime can be anything) is named by the nearest of them.
    /// `microseconds` since the epoch within the times a name can spell (1970 to 9999).
    public static func clamped(microseconds: Int64) -> Int64 { min(max(microseconds, 0), 253_402_300_799_999_999) }

    /// A time given in microseconds since the epoch, clamped to the years a name can spell.
    public static func time(microseconds: Int64) -> String {
        let microseconds = clamped(microseconds: microseconds)
        var seconds = time_t(microseconds / 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // Digits by hand: every save names a version, and String(format:) cost 3% of a 1 KiB
        // save's time in the daemon (perf).
        var name = [UInt8]()
        name.reserveCapacity(timeLength)
        func append(_ value: Int, digits: Int) {
            var divisor = 1
            for _ in 1..<digits { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                name.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        append(Int(parts.tm_year) + 1900, digits: 4)
        append(Int(parts.tm_mon) + 1, digits: 2)
        append(Int(parts.tm_mday), digits: 2)
        name.append(UInt8(ascii: "T"))
        append(Int(parts.tm_hour), digits: 2)
        append(Int(parts.tm_min), digits: 2)
        append(Int(parts.tm_sec), digits: 2)
        name.append(UInt8(ascii: "."))
        append(Int(microseconds % 1_000_000), digits: 6)
        name.append(UInt8(ascii: "Z"))
        return String(decoding: name, as: UTF8.self)
    }

    /// The time a version's name spells as `docfs versions` prints it, ISO 8601 to the millisecond
    /// (`2026-11-25T14:08:41.123Z`), from the name's own digits: so it is always the start of the
    /// name, which `docfs restore --at` matches. Printed through a `Date` (a binary fraction), a
    /// name's .892 came out .891, and `--at` then found no version (a CI run failed so).
    public static func printedTime(of name: String) -> String? {
        guard savedTime(of: name) != nil else { return nil }
        let digits = Array(name.utf8.prefix(timeLength))
        func part(_ range: Range<Int>) -> String { String(decoding: digits[range], as: UTF8.self) }
        return "\(part(0..<4))-\(part(4..<6))-\(part(6..<8))T\(part(9..<11)):\(part(11..<13)):\(part(13..<15)).\(part(16..<19))Z"
    }

    /// The save time a version's name starts with; nil for a name that is not a version's.
    public static func savedTime(of name: String) -> Date? {
        let bytes = Array(name.utf8.prefix(timeLength))
        guard bytes.count == timeLength, bytes[8] == UInt8(ascii: "T"), bytes[15] == UInt8(ascii: "."), bytes[22] == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(4..<6), let day = number(6..<8), let hour = number(9..<11),
              let minute = number(11..<13), let second = number(13..<15), let micro = number(16..<22)
        else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)) + TimeInterval(micro) / 1_000_000)
    }
}
