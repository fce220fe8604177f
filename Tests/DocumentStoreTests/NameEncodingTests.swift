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
