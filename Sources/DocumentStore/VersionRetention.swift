import Foundation

/// Which versions are kept as they age, the way Time Machine, Nextcloud and Syncthing thin theirs:
/// every version for an hour, then the newest of each hour for a day, of each day for a month, of
/// each week for a year; then a space cap, dropping the oldest first. The newest earlier version of
/// each document is never dropped, by either rule: one step back is always possible.
public struct VersionRetention: Sendable {
    /// The most space versions may take (the bytes only the archive holds); nil: no cap.
    public var capBytes: Int64?

    public init(capBytes: Int64?) {
        self.capBytes = capBytes
    }

    /// How long each tier lasts, from the save, and how wide its buckets are.
    static let tiers: [(until: TimeInterval, bucket: TimeInterval)] = [
        (3600, 0),
        (86_400, 3600),
        (30 * 86_400, 86_400),
        (365 * 86_400, 7 * 86_400),
    ]

    /// The indices of `times` (one document's versions' save times) that the schedule keeps at `now`.
    public static func scheduled(_ times: [Date], now: Date) -> Set<Int> {
        let newestFirst = times.indices.sorted { times[$0] > times[$1] }
        var kept: Set<Int> = []
        var bucketsTaken: Set<String> = []
        for (rank, index) in newestFirst.enumerated() {
            if rank == 0 {
                kept.insert(index)
                continue
            }
            let age = now.timeIntervalSince(times[index])
            guard let tier = tiers.firstIndex(where: { age < $0.until }) else { continue }
            let width = tiers[tier].bucket
            if width == 0 {
                kept.insert(index)
                continue
            }
            // The newest version in each bucket of this tier stands for it.
            let bucket = "\(tier):\(Int64((times[index].timeIntervalSince1970 / width).rounded(.down)))"
            if bucketsTaken.insert(bucket).inserted { kept.insert(index) }
        }
        return kept
    }

    /// What to drop from `documents` (each document's versions) at `now`: first what the schedule
    /// thins, then, while the rest takes more than the cap, the oldest versions that are not their
    /// document's newest. A document that no longer `exists` (removed) has no newest to keep from
    /// the cap: its versions go oldest first like the others, the last of them included.
    public func versionsToDrop(_ documents: [[DocumentVersion]], now: Date, exists: (String) -> Bool = { _ in true }) -> [DocumentVersion] {
        var dropped: [DocumentVersion] = []
        var candidates: [DocumentVersion] = []
        var total: Int64 = 0
        for versions in documents {
            let kept = Self.scheduled(versions.map(\.savedAt), now: now)
            let newest = versions.first.map { exists($0.document) } == false
                ? nil : versions.indices.max { versions[$0].savedAt < versions[$1].savedAt }
            for index in versions.indices {
                if kept.contains(index) {
                    total += versions[index].exclusiveBytes
                    if index != newest { candidates.append(versions[index]) }
                } else {
                    dropped.append(versions[index])
                }
            }
        }
        guard let capBytes, total > capBytes else { return dropped }
        for version in candidates.sorted(by: { $0.savedAt < $1.savedAt }) {
            guard total > capBytes else { break }
            dropped.append(version)
            total -= version.exclusiveBytes
        }
        return dropped
    }
}
