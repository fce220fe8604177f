import Foundation
import SystemSupport
import Testing

/// The two encodings every request goes through: a version's name from its save time, and whether a
/// path string holds an escaped byte (a name that is not UTF-8). Both were rewritten for speed (no
/// String(format:), memchr for the escape's lead byte); these pin what they must still answer.
@Suite struct NameEncodingTests {
    @Test func aVersionsNameSpellsItsSaveTimeToTheMicrosecond() {
        // 2026-11-25T14:08:41.000123Z
        let saved: Int64 = 1_795_615_721 * 1_000_000 + 123
        #expect(VersionName.time(microseconds: saved) == "20261125T140841.000123Z")
        #expect(VersionName.time(microseconds: 0) == "19700101T000000.000000Z")
        #expect(VersionName.time(microseconds: -5) == "19700101T000000.000000Z", "clamped to the epoch")
        #expect(VersionName.time(microseconds: .max) == "99991231T235959.999999Z", "clamped to the last time a name can spell")
        for microseconds: Int64 in [1, 999_999, 1_000_000, 951_782_400_000_001, saved] {
            let name = VersionName.time(microseconds: microseconds)
            #expect(name.utf8.count == VersionName.timeLength)
            let back = VersionName.savedTime(of: name + ".md").map { Int64(($0.timeIntervalSince1970 * 1_000_000).rounded()) }
            #expect(back == microseconds, "\(name) reads back as \(String(describing: back))")
        }
    }

    /// `docfs versions` prints a version's time, and `docfs restore --at` takes it back as the
    /// start of the version's name. Printed through a `Date`, some milliseconds came out one less
    /// (.892 as .891: a binary fraction truncated), and the restore found no version.
    @Test func aVersionsPrintedTimeIsTheStartOfItsNameAtEveryMillisecond() {
        var mismatches: [String] = []
        for millisecond in Int64(0)..<1000 {
            let name = VersionName.time(microseconds: 1_795_773_239 * 1_000_000 + millisecond * 1000) + ".md"
            let printed = VersionName.printedTime(of: name) ?? ""
            let digits = printed.filter { $0 != "-" && $0 != ":" && $0 != "Z" }
            if printed.count != 24 || !name.hasPrefix(digits) { mismatches.append("\(name): \(printed)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        #expect(VersionName.printedTime(of: "20261127T105359.892000Z.md") == "2026-11-27T10:53:59.892Z")
        #expect(VersionName.printedTime(of: "notes.md") == nil)
    }

    @Test func aPathIsPlainUnlessItHoldsAnEscapedByte() {
        #expect(FileSystemPath.isPlainEncoding("notes/café.md"))
        #expect(FileSystemPath.isPlainEncoding(""))
        // U+EFFF and U+F800 share a lead byte with the escapes (EF BF BF, EF A0 80) and are plain.
        #expect(FileSystemPath.isPlainEncoding("a\u{EFFF}b\u{F800}"))
        for bytes: [UInt8] in [[0xFF], [0x61, 0xFF, 0x2E, 0x6D, 0x64], [0x2F, 0x80], [0xC3]] {
            let string = FileSystemPath.string(fromBytes: bytes)
            #expect(!FileSystemPath.isPlainEncoding(string), "\(bytes) is escaped")
            #expect(FileSystemPath.bytes(of: string) == bytes)
        }
        // An escape at the very end and one after a plain EF lead.
        #expect(!FileSystemPath.isPlainEncoding(FileSystemPath.string(fromBytes: Array("a\u{EFFF}".utf8) + [0xFE])))
    }
}
