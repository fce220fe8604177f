import Foundation
import Glibc

/// A highly available PostgreSQL for one test, as teams run it: one etcd and three Patroni nodes
/// on loopback (listening on 127.0.0.1 and ::1), synchronous replication in strict mode, all under
/// a temporary folder, run as `nobody` (PostgreSQL refuses root). Stopped and removed on deinit.
final class PatroniCluster {
    let directory: String
    let postgresPorts: [Int]
    private let restPorts: [Int]
    private let etcdPorts: (client: Int, peer: Int)
    private var etcd: ChildProcess?
    private var nodes: [ChildProcess?] = []

    struct Member {
        let name: String
        let role: String
        let state: String
        let port: Int
    }

    static var isInstalled: Bool {
        ["/usr/bin/patroni", "/usr/bin/patronictl", "/usr/bin/etcd"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    init() throws {
        guard Self.isInstalled, let binaries = PostgresCluster.binaries else {
            throw PostgresCluster.Failure(message: "patroni and etcd-server are not installed (scripts/install-deps installs them)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-patroni-\(UUID().uuidString.prefix(8))").path
        postgresPorts = (0..<3).map { _ in PostgresCluster.freePort() }
        restPorts = (0..<3).map { _ in PostgresCluster.freePort() }
        etcdPorts = (PostgresCluster.freePort(), PostgresCluster.freePort())
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if geteuid() == 0 { _ = try MountedStore.run(["chown", "nobody", directory], timeout: 10) }
        etcd = try ChildProcess(asServerUser([
            "etcd", "--name", "etcd", "--data-dir", directory + "/etcd",
            "--listen-client-urls", "http://127.0.0.1:\(etcdPorts.client)", "--advertise-client-urls", "http://127.0.0.1:\(etcdPorts.client)",
            "--listen-peer-urls", "http://127.0.0.1:\(etcdPorts.peer)", "--initial-advertise-peer-urls", "http://127.0.0.1:\(etcdPorts.peer)",
            "--initial-cluster", "etcd=http://127.0.0.1:\(etcdPorts.peer)", "--logger", "zap", "--log-outputs", directory + "/etcd.log",
        ]), capture: false)
        for index in 0..<3 {
            let name = "node\(index + 1)"
            try FileManager.default.createDirectory(atPath: directory + "/" + name, withIntermediateDirectories: true)
            try configuration(node: index, binaries: binaries).write(toFile: configurationPath(index), atomically: true, encoding: .utf8)
            if geteuid() == 0 { _ = try MountedStore.run(["chown", "-R", "nobody", directory + "/" + name], timeout: 10) }
            nodes.append(try ChildProcess(asServerUser(["patroni", configurationPath(index)]), capture: false))
        }
        // Patroni 3.0 reports replicas "running" (later versions "streaming").
        let up = ["running", "streaming"]
        guard waitFor(seconds: 90, { members in
            members.count == 3 && members.allSatisfy { up.contains($0.state) } && members.contains { $0.role == "Leader" }
                && members.contains { $0.role == "Sync Standby" }
        }) else {
            throw PostgresCluster.Failure(message: "the Patroni cluster did not come up: \(members)\n\(logs)")
        }
        guard let leader = leader else { throw PostgresCluster.Failure(message: "no leader") }
        _ = try query("CREATE DATABASE docfs", port: leader.port, database: "postgres")
    }

    private func configurationPath(_ index: Int) -> String { directory + "/node\(index + 1)/patroni.yml" }

    private func configuration(node index: Int, binaries: String) -> String {
        let name = "node\(index + 1)"
        let folder = directory + "/" + name
        return """
            scope: docfs
            namespace: /\(directory.split(separator: "/").last ?? "docfs")/
            name: \(name)
            log:
              dir: \(folder)
              level: INFO
            restapi:
              listen: 127.0.0.1:\(restPorts[index])
              connect_address: 127.0.0.1:\(restPorts[index])
            etcd3:
              hosts: 127.0.0.1:\(etcdPorts.client)
            bootstrap:
              dcs:
                ttl: 10
                loop_wait: 1
                retry_timeout: 3
                maximum_lag_on_failover: 1048576
                synchronous_mode: true
                synchronous_mode_strict: true
                postgresql:
                  use_pg_rewind: true
                  use_slots: true
                  parameters:
                    wal_level: replica
                    hot_standby: "on"
                    max_wal_senders: 10
                    max_replication_slots: 10
                    wal_log_hints: "on"
              initdb:
                - encoding: UTF8
              pg_hba:
                - local all all trust
                - host replication all 127.0.0.1/32 trust
                - host all all 127.0.0.1/32 trust
                - host all all ::1/128 trust
            postgresql:
              listen: 127.0.0.1,::1:\(postgresPorts[index])
              connect_address: 127.0.0.1:\(postgresPorts[index])
              data_dir: \(folder)/data
              bin_dir: \(binaries)
              pgpass: \(folder)/pgpass
              authentication:
                superuser:
                  username: docfs
                  password: docfs
                replication:
                  username: replicator
                  password: replicator
                rewind:
                  username: docfs
                  password: docfs
              parameters:
                unix_socket_directories: \(folder)
                fsync: "off"

            """
    }

    deinit {
        for case let node? in nodes { kill(node.pid, SIGTERM) }
        for node in nodes { if let node, !node.wait(seconds: 20) { kill(node.pid, SIGKILL) } }
        // A postmaster Patroni left behind (it was killed first) goes too.
        for index in 0..<3 { if let pid = postmaster(of: index) { kill(pid, SIGKILL) } }
        if let etcd { kill(etcd.pid, SIGTERM); if !etcd.wait(seconds: 10) { kill(etcd.pid, SIGKILL) } }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The members as `patronictl list` reports them (empty when it cannot).
    var members: [Member] {
        guard let result = try? MountedStore.run(["patronictl", "-c", configurationPath(0), "list", "-f", "json"], timeout: 20, in: "/"),
              let list = try? JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]]
        else { return [] }
        return list.compactMap { member in
            guard let name = member["Member"] as? String, let host = member["Host"] as? String else { return nil }
            let port = Int(host.split(separator: ":").last ?? "") ?? 5432
            return Member(name: name, role: member["Role"] as? String ?? "", state: member["State"] as? String ?? "", port: port)
        }
    }

    var leader: Member? { members.first { $0.role == "Leader" && $0.state == "running" } }

    /// Polls the members until `condition` holds, up to `seconds`.
    func waitFor(seconds: Double, _ condition: ([Member]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(members) { return true }
            usleep(200_000)
        }
        return false
    }

    /// A planned switchover from the leader to its synchronous standby; returns the new leader's name.
    func switchover() throws -> String {
        guard let leader, let candidate = members.first(where: { $0.role == "Sync Standby" }) else {
            throw PostgresCluster.Failure(message: "no leader and synchronous standby to switch over: \(members)")
        }
        let result = try MountedStore.run(
            ["patronictl", "-c", configurationPath(0), "switchover", "--leader", leader.name, "--candidate", candidate.name, "--force"], timeout: 60, in: "/")
        guard result.succeeded else { throw PostgresCluster.Failure(message: "patronictl switchover: \(result.output)\(result.error)") }
        return candidate.name
    }

    /// The postmaster's process id of node `index` (from its data folder), if it runs.
    func postmaster(of index: Int) -> pid_t? {
        guard let text = try? String(contentsOfFile: directory + "/node\(index + 1)/data/postmaster.pid", encoding: .utf8),
              let pid = text.split(separator: "\n").first.flatMap({ pid_t($0) }), kill(pid, 0) == 0
        else { return nil }
        return pid
    }

    /// Kills the leader's postmaster with SIGKILL, as a crash would; returns the leader's name.
    func killLeaderPostmaster() throws -> String {
        guard let leader, let index = Int(leader.name.dropFirst(4)).map({ $0 - 1 }), let pid = postmaster(of: index) else {
            throw PostgresCluster.Failure(message: "no running leader to kill: \(members)")
        }
        kill(pid, SIGKILL)
        return leader.name
    }

    func query(_ sql: String, port: Int, database: String = "docfs") throws -> String {
        guard let binaries = PostgresCluster.binaries else { return "" }
        let result = try MountedStore.run(
            [binaries + "/psql", "-h", "127.0.0.1", "-p", String(port), "-U", "docfs", "-d", database, "-At", "-c", sql], timeout: 30, in: "/")
        guard result.succeeded else { throw PostgresCluster.Failure(message: "psql: \(result.error)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The tail of every node's Patroni log, for a failure's message.
    var logs: String {
        (0..<3).map { index -> String in
            let folder = directory + "/node\(index + 1)"
            let text = (try? String(contentsOfFile: folder + "/patroni.log", encoding: .utf8)) ?? ""
            return "node\(index + 1):\n" + text.split(separator: "\n").suffix(15).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// Run as `nobody` in the same process (setpriv execs, where runuser would fork), so that a
    /// signal to the child reaches the server itself.
    private func asServerUser(_ arguments: [String]) -> [String] {
        geteuid() == 0 ? ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + arguments : arguments
    }
}
