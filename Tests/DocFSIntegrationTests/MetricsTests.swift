import Foundation
import Glibc
import Testing

/// `docfs mount --metrics` (issue 39): Prometheus text at `/metrics`, scraped by curl while
/// programs save through the mount; the counters move as the saves do. Runs on directory stores
/// and, in `scripts/test`, on PostgreSQL stores too (which add the database's metrics).
@Suite(.timeLimit(.minutes(10)))
struct MetricsTests {
    /// The address the daemon logged it serves metrics at.
    static func endpoint(_ mount: MountedStore) throws -> String {
        var address: String?
        _ = MountedStore.waitUntil {
            address = mount.log.split(separator: "\n").lazy.compactMap { line in
                line.range(of: "serving metrics at ").map { String(line[$0.upperBound...]) }
            }.first
            return address != nil
        }
        return try #require(address, "the daemon logs where it serves metrics: \(mount.log)")
    }

    /// Every sample of a scrape, by its name with labels (`docfs_refusals_total{cause="invalid"}`).
    static func scrape(_ url: String) throws -> [String: Double] {
        let result = try MountedStore.run(["curl", "-sS", "--max-time", "10", url], timeout: 20)
        #expect(result.succeeded, "curl: \(result.error)")
        var samples: [String: Double] = [:]
        for line in result.output.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    @Test func countersMoveAsProgramsSaveThroughTheMount() throws {
        let mount = try MountedStore(texts: ["notes.json": #"{"v": 0}"#], arguments: ["--metrics", "127.0.0.1:0"])
        defer { mount.unmount() }
        let url = try Self.endpoint(mount)
        #expect(url.hasPrefix("http://127.0.0.1:"), "loopback unless told otherwise: \(url)")
        let before = try Self.scrape(url)
        for name in ["docfs_saves_total", #"docfs_refusals_total{cause="invalid"}"#, "docfs_quarantined_bytes_total", "docfs_versions_kept_total",
                     "docfs_versions_not_kept_total", "docfs_open_handles", "docfs_inodes_held", "docfs_version_bytes"] {
            #expect(before[name] != nil, "\(name) is there from the start")
        }

        for value in 1...5 { #expect(try mount.save("notes.json", Data(#"{"v": \#(value)}"#.utf8)) == "ok") }
        for _ in 1...2 { #expect(try mount.save("notes.json", Data(#"{"v": "#.utf8)) == "EIO") }
        // A document held open shows as an open handle.
        let holder = try ChildProcess(["bash", "-c", "exec sleep 60 < notes.json"], in: mount.mountPoint, capture: false)
        defer { kill(holder.pid, SIGKILL); holder.wait() }
        #expect(MountedStore.waitUntil { ((try? Self.scrape(url))?["docfs_open_handles"] ?? 0) >= 1 }, "the open handle is counted")

        let after = try Self.scrape(url)
        func moved(_ name: String) -> Double { (after[name] ?? 0) - (before[name] ?? 0) }
        #expect(moved("docfs_saves_total") == 5, "\(moved("docfs_saves_total"))")
        #expect(moved(#"docfs_refusals_total{cause="invalid"}"#) == 2)
        #expect(moved("docfs_quarantined_total") == 2)
        #expect(moved("docfs_quarantined_bytes_total") == 12, "two refused saves of 6 bytes")
        #expect(moved("docfs_versions_kept_total") == 5, "each save kept the version it replaced")
        #expect(moved("docfs_validation_seconds_count") >= 7, "each save was judged")
        #expect(moved("docfs_commit_seconds_count") >= 7)
        #expect(moved(#"docfs_fuse_request_seconds_count{operation="write"}"#) >= 7)
        #expect(moved(#"docfs_fuse_request_seconds_count{operation="flush"}"#) >= 7)
        #expect((after["docfs_inodes_held"] ?? 0) >= 2, "the root and notes.json")
        if mount.storeLocation != nil {
            #expect(after["docfs_database_outages_total"] == 0)
            #expect(after["docfs_change_feed_lag_seconds"] != nil)
        }

        // Anything but GET /metrics is refused.
        let base = String(url.dropLast("/metrics".count))
        let missing = try MountedStore.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", base + "/other"], timeout: 20)
        #expect(missing.output == "404")
        let posted = try MountedStore.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", url], timeout: 20)
        #expect(posted.output == "405")
    }

    @Test func aMetricsAddressThatIsNoAddressFailsTheMount() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-metrics-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: root + "/store", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/mnt", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let refused = try MountedStore.run([MountedStore.binary, "mount", root + "/store", root + "/mnt", "--metrics", "here"], timeout: 30)
        #expect(!refused.succeeded && refused.error.contains("--metrics 'here' is not an address and port"), "\(refused.error)")
    }
}
