import Foundation
import Glibc
import Synchronization

/// A throwaway PostgreSQL server for one test: a data folder of its own in a temporary folder,
/// `pg_ctl` on a free port of 127.0.0.1, run as the unprivileged user `nobody` when the tests run as
/// root (PostgreSQL refuses to run as root). Stopped (immediately) and removed on deinit.
final class PostgresCluster {
    let directory: String
    let port: Int
    private var running = false

    static var binaries: String? {
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }
        return versions.map { "/usr/lib/postgresql/\($0)/bin" }.first { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }
    }

    /// A store location in this cluster's database; each name is a separate store.
    func location(store: String) -> String { "postgresql://docfs@127.0.0.1:\(port)/docfs?store=\(store)" }

    init() throws {
        guard let binaries = Self.binaries else { throw Failure(message: "PostgreSQL is not installed (scripts/install-deps installs it)") }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-pg-\(UUID().uuidString.prefix(8))").path
        port = Self.freePort()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if geteuid() == 0 { _ = try MountedStore.run(["chown", "nobody", directory], timeout: 10) }
        try runAsServerUser(["cp", "-a", try Self.template(binaries: binaries), directory + "/data"], timeout: 60)
        try start()
    }

    /// A data folder with the empty `docfs` database, made once per test process (initdb, a start,
    /// createdb, a clean stop): each server starts from a copy of it, which costs a tenth of
    /// making one. Removed when the process exits.
    private static func template(binaries: String) throws -> String {
        try templateFolder.withLock { folder in
            if let folder { return folder + "/data" }
            let made = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-pg-template-\(getpid())").path
            try? FileManager.default.removeItem(atPath: made)
            try FileManager.default.createDirectory(atPath: made, withIntermediateDirectories: true)
            if geteuid() == 0 { _ = try MountedStore.run(["chown", "nobody", made], timeout: 10) }
            let template = PostgresCluster(directory: made, port: freePort())
            try template.runAsServerUser([binaries + "/initdb", "-D", made + "/data", "-A", "trust", "-U", "docfs", "--no-sync"], timeout: 60)
            try template.start()
            try template.runAsServerUser([binaries + "/createdb", "-h", "127.0.0.1", "-p", String(template.port), "-U", "docfs", "docfs"], timeout: 30)
            // A copy of a folder whose server still runs would not start: the stop must succeed.
            try template.runAsServerUser([binaries + "/pg_ctl", "-D", made + "/data", "-m", "fast", "-w", "-t", "60", "stop"], timeout: 70)
            template.running = false
            folder = made
            atexit { PostgresCluster.removeTemplate() }
            return made + "/data"
        }
    }

    private static let templateFolder = Mutex<String?>(nil)

    private static func removeTemplate() {
        if let folder = templateFolder.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: folder) }
    }

    /// The template's server: its folder is not removed with it.
    private init(directory: String, port: Int) {
        self.directory = directory
        self.port = port
        isTemplate = true
    }
    private var isTemplate = false

    func start() throws {
        guard let binaries = Self.binaries else { return }
        try runAsServerUser([
            binaries + "/pg_ctl", "-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "30",
            "-o", "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off", "start",
        ], timeout: 40)
        running = true
    }

    /// `mode`: smart, fast or immediate (a crash, as far as clients can tell).
    func stop(mode: String = "fast") {
        guard running, let binaries = Self.binaries else { return }
        _ = try? runAsServerUser([binaries + "/pg_ctl", "-D", directory + "/data", "-m", mode, "-w", "-t", "30", "stop"], timeout: 40)
        running = false
    }

    /// Runs SQL with psql against the store's database; returns its output (unaligned, tuples only).
    func query(_ sql: String) throws -> String {
        guard let binaries = Self.binaries else { return "" }
        let result = try MountedStore.run(
            [binaries + "/psql", "-h", "127.0.0.1", "-p", String(port), "-U", "docfs", "-d", "docfs", "-At", "-c", sql], timeout: 30)
        guard result.succeeded else { throw Failure(message: "psql: \(result.error)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit {
        stop(mode: "immediate")
        if !isTemplate { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Makes `role` log in with its password over TCP (scram-sha-256), ahead of the trust rules.
    func requirePassword(forRole role: String) throws {
        guard let binaries = Self.binaries else { return }
        let rules = directory + "/data/pg_hba.conf"
        let existing = try String(contentsOfFile: rules, encoding: .utf8)
        try ("host all \(role) 127.0.0.1/32 scram-sha-256\n" + existing).write(toFile: rules, atomically: false, encoding: .utf8)
        try runAsServerUser([binaries + "/pg_ctl", "-D", directory + "/data", "reload"], timeout: 30)
    }

    private func runAsServerUser(_ arguments: [String], timeout: Int) throws {
        let command = geteuid() == 0 ? ["runuser", "-u", "nobody", "--"] + arguments : arguments
        let result = try MountedStore.run(command, timeout: timeout, in: "/")
        guard result.succeeded else {
            let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
            throw Failure(message: "\(arguments.joined(separator: " ")): \(result.output)\(result.error)\(log)")
        }
    }

    /// A port nothing listens on now: the kernel's pick for a socket bound to port 0.
    static func freePort() -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let port = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic -> Int in
                guard bind(descriptor, generic, length) == 0, getsockname(descriptor, generic, &length) == 0 else { return 0 }
                return Int(UInt16(bigEndian: pointer.pointee.sin_port))
            }
        }
        return port == 0 ? Int.random(in: 20000...60000) : port
    }

    struct Failure: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}
