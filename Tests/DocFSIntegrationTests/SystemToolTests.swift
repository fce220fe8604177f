import Foundation
import Glibc
import Testing

/// The installed binary: `$DOCFS_INSTALLED`, else /usr/bin/docfs when present.
enum InstalledDocFS {
    static var path: String? {
        let candidate = ProcessInfo.processInfo.environment["DOCFS_INSTALLED"] ?? "/usr/bin/docfs"
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : nil
    }
}

/// DocFS as the system runs it: the installed `docfs` (the Debian package `scripts/test` builds and
/// installs) as mount.fuse3's helper, from fstab, under systemd's readiness protocol, daemonized
/// with no syslog, and `docfs check`/`status` on a store.
@Suite(.serialized, .timeLimit(.minutes(10)), .enabled(if: InstalledDocFS.path != nil, "needs the installed docfs (scripts/test installs the package as root)"))
struct SystemToolTests {
    static var installed: String? { InstalledDocFS.path }

    /// A store and a mount point, unmounted and removed at the end whatever happened.
    final class Place {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-sys-\(UUID().uuidString.prefix(8))").path
        var store: String { root + "/store" }
        var mountPoint: String { root + "/mnt" }

        init(files: [String: String] = ["hello.txt": "Hello.\n", "settings.json": "{\"theme\": \"dark\"}\n"]) throws {
            for (path, text) in files {
                let url = URL(fileURLWithPath: store + "/" + path)
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(text.utf8).write(to: url)
            }
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        }

        var isMounted: Bool {
            ((try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? "").split(separator: "\n")
                .contains { $0.split(separator: " ").dropFirst(4).first.map(String.init) == mountPoint }
        }

        func run(_ arguments: [String], in directory: String = "/") throws -> MountedStore.Result {
            try MountedStore.run(arguments, timeout: 30, in: directory)
        }

        deinit {
            _ = try? MountedStore.run(["fusermount3", "-uz", mountPoint], timeout: 10)
            _ = try? MountedStore.run(["pkill", "-KILL", "-f", "[d]ocfs mount \(store)"], timeout: 10)
            try? FileManager.default.removeItem(atPath: root)
        }
    }

    @Test func mountTypeFuseDocfsWithReadOnlyShowsTheStoreAsSource() throws {
        let place = try Place()
        let mount = try place.run(["mount", "-t", "fuse.docfs", place.store, place.mountPoint, "-o", "ro"])
        #expect(mount.succeeded, "\(mount.error)")
        #expect(try place.run(["findmnt", "-n", "-o", "SOURCE,FSTYPE", place.mountPoint]).output == "\(place.store) fuse.docfs\n")
        #expect(try place.run(["cat", place.mountPoint + "/hello.txt"]).output == "Hello.\n")
        let write = try place.run(["sh", "-c", "echo x >> hello.txt"], in: place.mountPoint)
        #expect(!write.succeeded && write.error.contains("Read-only file system"))
        // The daemon keeps no directory busy: unmounting works from anywhere.
        let unmount = try place.run(["umount", place.mountPoint], in: place.root)
        #expect(unmount.succeeded && !place.isMounted, "\(unmount.error)")
    }

    /// xfstests (and libfuse's examples) mount a name, with the store given as `-o source=`: the
    /// name is the mount's source, so `umount NAME` finds it.
    @Test func aMountNamedWithTheStoreAsSourceOptionIsUnmountedByItsName() throws {
        let place = try Place()
        let name = "docfs-named-\(getpid())"
        let mount = try place.run(["mount", "-t", "fuse.docfs", name, place.mountPoint, "-o", "source=\(place.store),allow_other"], in: place.root)
        #expect(mount.succeeded, "\(mount.error)")
        #expect(try place.run(["findmnt", "-n", "-o", "SOURCE,FSTYPE", place.mountPoint]).output == "\(name) fuse.docfs\n")
        #expect(try place.run(["cat", place.mountPoint + "/hello.txt"]).output == "Hello.\n")
        #expect(try place.run(["umount", name]).succeeded && !place.isMounted)
        let empty = try place.run(["mount", "-t", "fuse.docfs", name, place.mountPoint, "-o", "source="], in: place.root)
        #expect(!empty.succeeded && empty.error.contains("-o source: needs a store"), "\(empty.error)")
    }

    /// `mount -o remount,ro` (xfstests generic/306) runs the helper with `remount`: the mount
    /// turns read-only in place and back, where DocFS tried to mount again ("busy").
    @Test func aRemountMakesTheMountReadOnlyAndWritableAgain() throws {
        let place = try Place()
        #expect(try place.run(["mount", "-t", "fuse.docfs", place.store, place.mountPoint]).succeeded)
        let readOnly = try place.run(["mount", "-o", "remount,ro", place.mountPoint])
        #expect(readOnly.succeeded, "\(readOnly.error)")
        #expect(try place.run(["findmnt", "-n", "-o", "OPTIONS", place.mountPoint]).output.hasPrefix("ro,"))
        let refused = try place.run(["sh", "-c", "echo x >> hello.txt"], in: place.mountPoint)
        #expect(!refused.succeeded && refused.error.contains("Read-only file system"), "\(refused.error)")
        #expect(try place.run(["cat", place.mountPoint + "/hello.txt"]).output == "Hello.\n")
        #expect(try place.run(["mount", "-o", "remount,rw", place.mountPoint]).succeeded)
        #expect(try place.run(["sh", "-c", "echo again >> hello.txt"], in: place.mountPoint).succeeded)
        #expect(try place.run(["cat", place.mountPoint + "/hello.txt"]).output == "Hello.\nagain\n")
        let elsewhere = try place.run([try #require(Self.installed), place.store, place.root, "-o", "remount,ro"])
        #expect(!elsewhere.succeeded && elsewhere.error.contains("no DocFS is mounted there"), "\(elsewhere.error)")
        #expect(try place.run(["umount", place.mountPoint]).succeeded)
    }

    @Test func anFstabLineWithSystemdOptionsMounts() throws {
        let place = try Place()
        let fstab = place.root + "/fstab"
        try Data("\(place.store) \(place.mountPoint) fuse.docfs defaults,nofail,_netdev,x-systemd.automount,noatime 0 0\n".utf8)
            .write(to: URL(fileURLWithPath: fstab))
        let mount = try place.run(["mount", "-a", "-T", fstab])
        #expect(mount.succeeded && place.isMounted, "\(mount.error)")
        #expect(try place.run(["findmnt", "-n", "-o", "SOURCE", place.mountPoint]).output == "\(place.store)\n")
        #expect(try place.run(["umount", place.mountPoint]).succeeded)
    }

    @Test func fstabLinesWithPostgreSQLLocationsInEitherFormMountTheStore() throws {
        let cluster = try PostgresCluster()
        let place = try Place(files: [:])
        let second = place.root + "/mnt2"
        try FileManager.default.createDirectory(atPath: second, withIntermediateDirectories: true)
        defer {
            _ = try? place.run(["umount", "-l", place.mountPoint])
            _ = try? place.run(["umount", "-l", second])
        }
        // A URI with several hosts, and keyword/value pairs (fstab writes their spaces as \040).
        let uri = "postgresql://docfs@127.0.0.1:\(cluster.port),[::1]:\(cluster.port)/docfs?target_session_attrs=read-write&store=fstab"
        let keywords = "host=127.0.0.1 port=\(cluster.port) dbname=docfs user=docfs store=fstab"
        let fstab = place.root + "/fstab"
        try Data("""
            \(uri) \(place.mountPoint) fuse.docfs defaults,nofail 0 0
            \(keywords.replacingOccurrences(of: " ", with: "\\040")) \(second) fuse.docfs defaults,nofail 0 0

            """.utf8).write(to: URL(fileURLWithPath: fstab))
        let mount = try place.run(["mount", "-a", "-T", fstab])
        #expect(mount.succeeded, "\(mount.error)")
        #expect(try place.run(["findmnt", "-n", "-o", "SOURCE", second]).output == "\(keywords)\n")
        #expect(try place.run(["sh", "-c", "echo '[1]' > \(place.mountPoint)/a.json"]).succeeded)
        #expect(MountedStore.waitUntil { (try? String(contentsOfFile: second + "/a.json", encoding: .utf8)) == "[1]\n" })
    }

    /// fusermount3 unmounts a dead daemon's mount only if, when the daemon's socket to it closes,
    /// the mount's connection is already gone. Each round pins the daemon and fusermount3 to one
    /// CPU and makes fusermount3 real-time, so it runs the moment the socket closes: with the
    /// socket let go before /dev/fuse (as libfuse leaves it), it found the connection still there
    /// and left a dead mount, in the first round of each of 3 runs. Where the machine refuses the
    /// pinning or the real-time class, the rounds still check that the mount goes.
    @Test func autoUnmountReturnsAndTheMountGoesWithTheDaemon() throws {
        let place = try Place()
        let docfs = try #require(Self.installed)
        // A CPU this process may run on (a container's cpuset need not hold CPU 0): the first of
        // its list ("0-1", "2,5-7").
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let allowed = status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") }?.dropFirst("Cpus_allowed_list:".count)
        let cpu = allowed.flatMap { Int($0.trimmingCharacters(in: .whitespaces).prefix { $0.isNumber }) } ?? 0
        for round in 1...8 {
            let mount = try place.run([docfs, place.store, place.mountPoint, "-o", "auto_unmount"])
            try #require(mount.succeeded && place.isMounted, "\(mount.error)")
            let daemon = try place.run(["pgrep", "-f", "[d]ocfs mount \(place.store)"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            let watcher = try place.run(["pgrep", "-f", "^fusermount3 .* \(place.mountPoint)$"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            try #require(Int32(daemon) != nil && Int32(watcher) != nil, "daemon '\(daemon)', fusermount3 '\(watcher)'")
            _ = try place.run(["taskset", "-a", "-p", "-c", "\(cpu)", daemon])
            _ = try place.run(["taskset", "-p", "-c", "\(cpu)", watcher])
            _ = try place.run(["chrt", "-f", "-p", "50", watcher])
            #expect(try place.run(["kill", "-KILL", daemon]).succeeded)
            let gone = MountedStore.waitUntil(seconds: 10) { !place.isMounted }
            #expect(gone, "round \(round): fusermount3's auto_unmount removed the mount")
            guard gone else { break }
        }
    }

    @Test func readinessReachesSystemdsNotifySocket() throws {
        let place = try Place()
        let docfs = try #require(Self.installed)
        // A stand-in for systemd: a datagram socket named by NOTIFY_SOCKET, and docfs in the
        // foreground as a Type=notify service runs it.
        let result = try place.run(["python3", "-c", """
            import os, socket, subprocess, sys, time
            path = sys.argv[2] + '/notify.sock'
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); listener.bind(path); listener.settimeout(20)
            daemon = subprocess.Popen([sys.argv[1], 'mount', sys.argv[3], sys.argv[4], '-f'], env=dict(os.environ, NOTIFY_SOCKET=path),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            message = listener.recv(4096).decode()
            mounted = os.path.ismount(sys.argv[4])
            subprocess.run(['fusermount3', '-u', sys.argv[4]])
            stopping = listener.recv(4096).decode()
            daemon.wait(timeout=20)
            print(message.split('\\n')[0], mounted, stopping, daemon.returncode)
            """, docfs, place.root, place.store, place.mountPoint])
        #expect(result.output == "READY=1 True STOPPING=1 0\n", "\(result.error)")
    }

    @Test(.enabled(if: !FileManager.default.fileExists(atPath: "/dev/log"), "this machine has a syslog socket"))
    func aDaemonWithoutSyslogKeepsItsLogAndStatusShowsTheRefusal() throws {
        let place = try Place()
        let docfs = try #require(Self.installed)
        // Said to a person at a terminal (`script` gives the command one); a script is told nothing.
        let typed = try place.run(["script", "-qec", "'\(docfs)' mount '\(place.store)' '\(place.mountPoint)'", "/dev/null"])
        #expect(typed.succeeded && typed.output.contains("logging to \(place.store)/.docfs/log"), "\(typed.output)\(typed.error)")
        #expect(try place.run(["umount", place.mountPoint]).succeeded)
        let mount = try place.run([docfs, "mount", place.store, place.mountPoint])
        #expect(mount.succeeded && mount.error.isEmpty, "\(mount.error)")
        let refused = try place.run(["sh", "-c", "printf '{\"theme\": ' | cat > settings.json"], in: place.mountPoint)
        #expect(!refused.succeeded)
        let log = (try? String(contentsOfFile: place.store + "/.docfs/log", encoding: .utf8)) ?? ""
        #expect(log.contains("refused a write to settings.json") && log.contains("line 1, column 11"), "\(log)")
        let status = try place.run([docfs, "status", place.store])
        #expect(status.succeeded && status.output.contains("settings.json: it does not decode as"), "\(status.output)")
        let json = try place.run([docfs, "status", "--json", place.mountPoint])
        let parsed = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        #expect((parsed?["lastRefusals"] as? [[String: Any]])?.first?["document"] as? String == "settings.json", "\(json.output)")
        #expect(try place.run(["umount", place.mountPoint]).succeeded)
    }

    @Test func checkListsExactlyTheDocumentsThatDoNotDecode() throws {
        let place = try Place(files: [
            "fine.txt": "fine\n", "fine.json": "[1, 2]", "notes/bad.json": "{\"a\": 1,}", "bad.txt": "caf\u{E9}",
            "Broken.textbundle/text.md": "# no info.json\n", "Good.textbundle/info.json": "{\"version\": 2}",
            "Good.textbundle/text.md": "# Good\n", "raw.bin": "anything",
        ])
        // A byte that is not UTF-8, which Swift strings cannot hold.
        try Data([0x61, 0xFF]).write(to: URL(fileURLWithPath: place.store + "/bad.txt"))
        let docfs = try #require(Self.installed)
        let text = try place.run([docfs, "check", place.store])
        #expect(text.status == 1, "\(text.output)\(text.error)")
        let listed = text.output.split(separator: "\n").filter { !$0.hasPrefix("checked") }.map { $0.split(separator: " ", omittingEmptySubsequences: true)[1] }
        #expect(listed.sorted() == ["Broken.textbundle", "bad.txt", "notes/bad.json"], "\(text.output)")
        #expect(text.output.contains("line 1, column 9"))
        let json = try place.run([docfs, "check", "--json", place.store])
        #expect(json.status == 1)
        let report = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        let paths = (report?["problems"] as? [[String: Any]])?.compactMap { $0["path"] as? String }.sorted()
        #expect(paths == ["Broken.textbundle", "bad.txt", "notes/bad.json"], "\(json.output)")
        #expect(report?["checked"] as? Int == 6)
        #expect(!FileManager.default.fileExists(atPath: place.store + "/.docfs"), "check never writes to the store")
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("examples/store").path
        let clean = try place.run([docfs, "check", example])
        #expect(clean.status == 0, "\(clean.output)\(clean.error)")
    }

    @Test func versionNamesLibfuse() throws {
        let docfs = try #require(Self.installed)
        for flag in ["--version", "-V"] {
            let version = try MountedStore.run([docfs, flag], timeout: 10)
            #expect(version.output.hasPrefix("docfs ") && version.output.contains("libfuse 3."), "\(version.output)")
        }
    }
}
