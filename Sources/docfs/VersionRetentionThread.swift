import DocumentStore
import Foundation
import Logging

/// `--versions-cap`: a size, or a share of the store's file system (`10%`).
enum VersionCap {
    case bytes(Int64)
    case percent(Double)

    init?(_ text: String) {
        if text.hasSuffix("%") {
            guard let value = Double(text.dropLast()), value > 0, value <= 100 else { return nil }
            self = .percent(value)
        } else {
            guard let bytes = ByteCount.parse(text) else { return nil }
            self = .bytes(bytes)
        }
    }

    /// The cap in bytes; a share is of the file system the versions are kept on (a PostgreSQL
    /// mount's mirror: every mount holds every version).
    func bytes(for store: any DocumentStore) -> Int64? {
        switch self {
        case .bytes(let bytes): return bytes
        case .percent(let share):
            guard let statistics = try? store.statistics() else { return nil }
            return Int64(Double(statistics.f_blocks) * Double(statistics.f_frsize) * share / 100)
        }
    }
}

/// Thins the store's versions to the retention schedule on a thread of its own, once at the start
/// and then every ten minutes: it takes no lock a save waits for but one removal's, so it never
/// delays a save.
enum VersionRetentionThread {
    static let interval: TimeInterval = 600

    static func start(store: any DocumentStore, cap: VersionCap, logger: Logger) {
        let thread = Thread {
            while true {
                let retention = VersionRetention(capBytes: cap.bytes(for: store))
                let (count, bytes) = store.pruneVersions(retention, now: Date())
                if count > 0 {
                    logger.info("versions: dropped \(count) that the retention schedule or the space cap no longer keeps (\(ByteCountFormatter.string(fromByteCount: bytes, countStyle: .binary)))")
                }
                Thread.sleep(forTimeInterval: interval)
            }
        }
        thread.name = "docfs-versions"
        thread.qualityOfService = .background
        thread.start()
    }
}
