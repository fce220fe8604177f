@testable import DocumentStore
import Glibc
import Testing

/// A save's record says who could not reach the document through its folders when it was saved
/// (one byte after the time and the saver); a record an earlier DocFS wrote, without that byte,
/// still reads, and says the reach is not known (it is found out when the version is kept).
@Suite struct SaveRecordTests {
    private let time = timespec(tv_sec: 1_795_000_000, tv_nsec: 123_456_789)

    @Test func eachUnreachableClassSurvivesTheRecord() {
        for unreachable: mode_t in [0, 0o007, 0o070, 0o077] {
            let record = SaveRecord(time: time, userID: 1000, unreachable: unreachable)
            #expect(record.bytes.count == 13)
            #expect(SaveRecord(bytes: record.bytes) == record)
        }
    }

    @Test func anEarlierRecordReadsWithNothingUnreachable() {
        let earlier = Array(SaveRecord(time: time, userID: 7).bytes.prefix(12))
        let read = SaveRecord(bytes: earlier)
        #expect(read?.userID == 7 && read?.time.tv_nsec == 123_456_789 && read?.unreachable == 0 && read?.knowsReach == false)
        #expect(SaveRecord(time: time, userID: 7).bytes == earlier, "an unknown reach is not written as known")
    }

    @Test func bitsNoDocFSWritesCloseBothClasses() {
        var bytes = SaveRecord(time: time, userID: 7, unreachable: 0).bytes
        bytes[12] = 4
        #expect(SaveRecord(bytes: bytes)?.unreachable == 0o077)
        #expect(SaveRecord(bytes: bytes + [0]) == nil)
    }
}
