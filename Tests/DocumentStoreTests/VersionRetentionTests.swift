import DocumentStore
import Foundation
import Glibc
import SystemSupport
import Testing

/// Retention thins a year of saves to the staggered schedule (every version for an hour, one an
/// hour for a day, one a day for a month, one a week for a year), honours the space cap, and always
/// keeps each document's newest earlier version. The clock is injected: saves are dated by their
/// save records, and pruning is asked "as of" a time.
@Suite struct VersionRetentionTests {
    private static let hour: TimeInterval = 3600
    private static let day: TimeInterval = 86_400

    /// A store in a temporary folder, removed by the caller.
    private func makeStore() throws -> (DirectoryStore, String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-retention-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return (try DirectoryStore(path: folder), folder)
    }

    /// Saves `contents` at `path` as DocFS does: the version it replaces kept, the new one recorded
    /// as saved at `time`.
    private func save(_ store: DirectoryStore, _ path: String, _ contents: String, at time: Date) throws {
        let stage = try store.makeStagingFile(seededFrom: nil, for: path)
        try FileIO.writeAll(stage.descriptor.rawValue, Data(contents.utf8))
        try store.keepVersion(of: path)
        _ = try store.install(stage, at: path, durable: false)
        let seconds = time.timeIntervalSince1970.rounded(.down)
        store.recordSave(of: path, by: 1000, at: timespec(tv_sec: Int(seconds), tv_nsec: Int((time.timeIntervalSince1970 - seconds) * 1e9)))
    }

    private func times(_ store: DirectoryStore, _ path: String) -> [Date] {
        store.versions?.versions(of: path).map(\.savedAt) ?? []
    }

    @Test func aYearOfSavesIsThinnedToTheStaggeredSchedule() throws {
        let (store, folder) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        // Every six hours for 400 days, then every five minutes in the last hour.
        var saves: [Date] = stride(from: 400 * Self.day, to: Self.hour, by: -6 * Self.hour).map { now.addingTimeInterval(-$0) }
        saves += stride(from: Self.hour - 300, to: 0, by: -300).map { now.addingTimeInterval(-$0) }
        for (number, time) in saves.enumerated() { try save(store, "a.md", "save \(number)\n", at: time) }
        // The first save replaced nothing; every later one kept the save before it.
        let before = times(store, "a.md")
        #expect(before.count == saves.count - 1)

        store.pruneVersions(VersionRetention(capBytes: nil), now: now)
        let kept = times(store, "a.md")
        let ages = kept.map { now.timeIntervalSince($0) }
        // Under an hour: every version.
        #expect(ages.filter { $0 < Self.hour }.count == before.filter { now.timeIntervalSince($0) < Self.hour }.count)
        // Each tier: at most one per bucket, and every bucket that had a version keeps one.
        for (from, until, width) in [(Self.hour, Self.day, Self.hour), (Self.day, 30 * Self.day, Self.day), (30 * Self.day, 365 * Self.day, 7 * Self.day)] {
            func buckets(_ dates: [Date]) -> [Int64: Int] {
                dates.filter { now.timeIntervalSince($0) >= from && now.timeIntervalSince($0) < until }
                    .reduce(into: [:]) { $0[Int64(($1.timeIntervalSince1970 / width).rounded(.down)), default: 0] += 1 }
            }
            let keptBuckets = buckets(kept)
            #expect(keptBuckets.values.allSatisfy { $0 == 1 }, "tier \(from)–\(until): \(keptBuckets.filter { $0.value > 1 })")
            #expect(Set(keptBuckets.keys) == Set(buckets(before).keys), "tier \(from)–\(until) lost a bucket")
        }
        // Past a year: nothing (the newest version is recent).
        #expect(ages.allSatisfy { $0 < 365 * Self.day })
        // About 11 + 4 + 29 + 48 versions stand for 1,611 saves.
        #expect(kept.count >= 85 && kept.count <= 97, "\(kept.count) kept")
        // Pruning again changes nothing.
        #expect(store.pruneVersions(VersionRetention(capBytes: nil), now: now).count == 0)
    }

    @Test func theCapDropsTheOldestFirstButNeverANewestEarlierVersion() throws {
        let (store, folder) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let block = String(repeating: "x", count: 8192)
        // Two documents, each saved ten times in the last ten minutes with 8 KiB versions.
        for minute in 0..<10 {
            let time = now.addingTimeInterval(TimeInterval(-600 + minute * 60))
            try save(store, "a.md", block + "a\(minute)", at: time)
            try save(store, "b.md", block + "b\(minute)", at: time.addingTimeInterval(1))
        }
        let versionBytes = try #require(store.versions?.versions(of: "a.md").first?.exclusiveBytes)
        #expect(versionBytes >= 8192)
        // Room for five versions: the oldest go, whichever document they are of.
        store.pruneVersions(VersionRetention(capBytes: 5 * versionBytes), now: now)
        let a = times(store, "a.md")
        let b = times(store, "b.md")
        #expect(a.count + b.count == 5)
        let all = (a + b).sorted()
        // The five newest of the 18 stay: b's and a's of the last three saves but a's oldest of them.
        #expect(all.map { now.timeIntervalSince($0) } == [239, 180, 179, 120, 119], "the oldest went first")
        // No room at all: each document keeps its newest earlier version.
        store.pruneVersions(VersionRetention(capBytes: 0), now: now)
        #expect(times(store, "a.md").count == 1)
        #expect(times(store, "b.md").count == 1)
        #expect(times(store, "a.md").first.map { now.timeIntervalSince($0) } == 120)
        // A removed document has no newest version to keep from the cap: its space comes back.
        try store.keepVersion(of: "b.md")
        try store.removeFile("b.md")
        store.pruneVersions(VersionRetention(capBytes: 0), now: now)
        #expect(times(store, "b.md").isEmpty)
        #expect(times(store, "a.md").count == 1)
    }

    @Test func aDocumentsOnlyVersionOutlivesTheSchedule() throws {
        let (store, folder) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        try save(store, "old.md", "first\n", at: now.addingTimeInterval(-800 * Self.day))
        try save(store, "old.md", "second\n", at: now.addingTimeInterval(-700 * Self.day))
        try save(store, "old.md", "third\n", at: now.addingTimeInterval(-600 * Self.day))
        store.pruneVersions(VersionRetention(capBytes: 0), now: now)
        let left = try #require(store.versions?.versions(of: "old.md"))
        #expect(left.count == 1)
        #expect(try String(contentsOfFile: try #require(left.first).location, encoding: .utf8) == "second\n")
    }

    @Test func scheduledKeepsTheNewestOfEachBucket() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        // Three saves in one hour-bucket two hours back: the newest of them stays.
        let bucketStart = (now.timeIntervalSince1970 / Self.hour).rounded(.down) * Self.hour - 2 * Self.hour
        let times = [bucketStart + 60, bucketStart + 1800, bucketStart + 3000, now.timeIntervalSince1970 - 10].map(Date.init(timeIntervalSince1970:))
        #expect(VersionRetention.scheduled(times, now: now) == [2, 3])
    }
}
