import Foundation
import Glibc
import Testing

/// A shared store on a highly available PostgreSQL (Patroni, etcd, a synchronous standby in strict
/// mode): a planned switchover and a crashed primary are invisible to programs saving through two
/// mounts. Every save acknowledged is whole in both mounts and in the database, and none fails.
@Suite(.serialized, .timeLimit(.minutes(10)))
final class PatroniFailoverTests {
    /// New files saved through one mount in a loop by Python, each open-write-close logged as
    /// `ok NAME CONTENT SECONDS` or `failed NAME ERRNO`, until `stop`.
    final class SaveStream {
        let mount: MountedStore
        private let process: ChildProcess
        private let log: String
        private let stopFile: String

        init(mount: MountedStore, name: String) throws {
            self.mount = mount
            log = mount.root.appendingPathComponent("\(name).log").path
            stopFile = mount.root.appendingPathComponent("\(name).stop").path
            process = try ChildProcess(["timeout", "170", "python3", "-c", """
                import errno, os, secrets, sys, time
                folder, name, log, stop = sys.argv[1:5]
                n = 0
                with open(log, 'w', buffering=1) as out:
                    while not os.path.exists(stop):
                        n += 1
                        path, content, start = f"{name}-{n}.txt", f"{name}-{n}-{secrets.token_hex(8)}", time.monotonic()
                        try:
                            with open(os.path.join(folder, path), 'w') as f: f.write(content)
                            out.write(f"ok {path} {content} {time.monotonic() - start:.3f}\\n")
                        except OSError as e:
                            out.write(f"failed {path} {errno.errorcode.get(e.errno, e.errno)}\\n")
                """, mount.inMount(""), name, log, stopFile], capture: true)
        }

        var lines: [[Substring]] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map { $0.split(separator: " ") }
        }
        var acknowledged: [(path: String, content: String, seconds: Double)] {
            lines.filter { $0.count == 4 && $0[0] == "ok" }.map { (String($0[1]), String($0[2]), Double($0[3]) ?? 0) }
        }
        var failed: [String] { lines.filter { $0.first == "failed" }.map { $0.map(String.init).joined(separator: " ") } }

        func stop() {
            _ = FileManager.default.createFile(atPath: stopFile, contents: nil)
            process.wait()
        }
    }

    private func contents(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    @Test func savesThroughTwoMountsSurviveASwitchoverAndAKilledPrimary() throws {
        let cluster = try PatroniCluster()
        let ports = cluster.postgresPorts.map(String.init)
        // The forms libpq accepts for a cluster: a URI with host:port pairs, one with IPv6
        // addresses, and keyword/value pairs; each with our store= beside them.
        let uri = "postgresql://docfs@" + ports.map { "127.0.0.1:\($0)" }.joined(separator: ",") + "/docfs?target_session_attrs=read-write&store=ha"
        let ipv6 = "postgresql://docfs@" + ports.map { "[::1]:\($0)" }.joined(separator: ",") + "/docfs?target_session_attrs=read-write&store=ha"
        let keywords = "host=127.0.0.1,127.0.0.1,127.0.0.1 port=\(ports.joined(separator: ",")) dbname=docfs user=docfs target_session_attrs=read-write store=ha"
        let first = try MountedStore(postgres: uri)
        let second = try MountedStore(postgres: keywords)
        defer { first.unmount(); second.unmount() }
        do {
            let third = try MountedStore(postgres: ipv6)
            defer { third.unmount() }
            #expect(try third.save("ipv6.json", Data("[6]".utf8)) == "ok")
        }
        #expect(MountedStore.waitUntil { contents(first.inMount("ipv6.json")) == "[6]" && contents(second.inMount("ipv6.json")) == "[6]" })

        let streams = try [first, second].enumerated().map { index, mount in try SaveStream(mount: mount, name: "m\(index)") }
        func saved() -> [Int] { streams.map { $0.acknowledged.count } }
        func twentyMoreSaves() -> Bool {
            let before = saved()
            return MountedStore.waitUntil(seconds: 60) { zip(saved(), before).allSatisfy { $0 >= $1 + 20 } }
        }
        #expect(twentyMoreSaves(), "the saves did not start: \(streams.map(\.failed))")
        let promoted = try cluster.switchover()
        #expect(cluster.waitFor(seconds: 60) { $0.contains { $0.name == promoted && $0.role == "Leader" && $0.state == "running" } }, "\(cluster.logs)")
        #expect(twentyMoreSaves(), "saves stopped after the switchover: \(streams.map(\.failed))")
        let crashed = try cluster.killLeaderPostmaster()
        #expect(twentyMoreSaves(), "saves stopped after \(crashed)'s postmaster was killed: \(streams.map(\.failed))\n\(cluster.logs)")
        for stream in streams { stream.stop() }

        // None failed; every one acknowledged is whole in both mounts and stored once.
        let failed = streams.flatMap(\.failed)
        #expect(failed.isEmpty, "\(failed)")
        let acknowledged = streams.flatMap(\.acknowledged)
        for mount in [first, second] {
            let missing = { acknowledged.filter { self.contents(mount.inMount($0.path)) != $0.content } }
            #expect(MountedStore.waitUntil(seconds: 30) { missing().isEmpty }, "missing in \(mount.mountPoint): \(missing().prefix(5).map(\.path))")
        }
        let leader = try #require(cluster.leader)
        let stored = try cluster.query("SELECT count(*) FROM docfs_items WHERE convert_from(name, 'UTF8') ~ '^m[01]-[0-9]+[.]txt$'", port: leader.port)
        #expect(Int(stored) == acknowledged.count, "\(stored) stored, \(acknowledged.count) acknowledged")
        let slowest = acknowledged.map(\.seconds).max() ?? 0
        print("Patroni: \(acknowledged.count) saves through two mounts across a switchover to \(promoted) and a killed postmaster of \(crashed); \(failed.count) failed; slowest save \(slowest) s")
        #expect(first.log.contains("waiting for a primary") || second.log.contains("waiting for a primary"), "no save met the outage")
    }
}
