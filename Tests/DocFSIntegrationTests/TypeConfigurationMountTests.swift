import Foundation
import Glibc
import Testing

/// A type configuration file in force on a real mount: patterns mapping names to built-in types or
/// raw, a command type validating `.ini` with Python's configparser, a validator that hangs, and
/// one that does not exist.
@Suite(.timeLimit(.minutes(10)))
struct TypeConfigurationMountTests {
    static let configuration = """
        [patterns]
        "*.conf" = "toml"
        "*.log" = "raw"

        [types.ini]
        extensions = ["ini"]
        command = ["python3", "-c", "import sys, configparser; configparser.ConfigParser().read_string(sys.stdin.read())"]
        timeout = 5

        """

    /// A validator that notes each run in `counter`, then hangs (with a child of its own).
    static func slowType(counter: String) -> String {
        """

        [types.slow]
        extensions = ["slow"]
        command = ["sh", "-c", 'echo run >> "$0"; sleep 30.5; exit 0', "\(counter)"]
        timeout = 1
        """
    }

    /// Writes `text` as a configuration beside (not inside) a test's store; returns its path.
    static func writeConfiguration(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-config-\(UUID().uuidString.prefix(8)).toml").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
        return path
    }

    @Test func patternsAndACommandTypeValidateSavesThroughTheMount() throws {
        let config = try Self.writeConfiguration(Self.configuration)
        defer { unlink(config) }
        let mount = try MountedStore(texts: ["app.conf": "port = 1\n", "setup.ini": "[main]\nkey = 1\n"], arguments: ["--config", config])
        defer { mount.unmount() }

        #expect(try mount.save("app.conf", Data("port = 1\nport = 2\n".utf8)) == "EIO", "*.conf is TOML: a duplicate key is refused")
        #expect(mount.storeContents("app.conf") == "port = 1\n")
        #expect(try mount.save("app.conf", Data("port = 2\n".utf8)) == "ok")
        #expect(mount.storeContents("app.conf") == "port = 2\n")

        #expect(try mount.save("setup.ini", Data("key = 1 but no section\n".utf8)) == "EIO", "the validator refuses")
        #expect(mount.storeContents("setup.ini") == "[main]\nkey = 1\n", "and the stored document is kept")
        let reason = try #require(mount.quarantineReasons.first { $0.contains("document: setup.ini") })
        #expect(reason.contains("refused by validator python3 (exit status 1)") && reason.contains("MissingSectionHeaderError"), "\(reason)")
        #expect(try mount.save("setup.ini", Data("[main]\nkey = 2\n".utf8)) == "ok")
        #expect(mount.storeContents("setup.ini") == "[main]\nkey = 2\n")
        #expect(try mount.save("new.ini", Data("[fresh]\n".utf8)) == "ok", "a new document of a command type")

        #expect(try mount.save("server.log", Data([0x6F, 0x6B, 0xFF, 0x0A])) == "ok", "*.log is raw: any bytes")
        #expect(mount.storeData("server.log") == Data([0x6F, 0x6B, 0xFF, 0x0A]))
    }

    @Test func aValidatorPastItsTimeLimitIsKilledAndTheSaveRefused() throws {
        let counter = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-runs-\(UUID().uuidString.prefix(8))").path
        let config = try Self.writeConfiguration(Self.configuration + Self.slowType(counter: counter))
        defer { unlink(config); unlink(counter) }
        let mount = try MountedStore(texts: ["job.slow": "old\n"], arguments: ["--config", config])
        defer { mount.unmount() }
        let start = Date()
        #expect(try mount.save("job.slow", Data("new\n".utf8)) == "EIO")
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed < 10, "refused at the limit (\(elapsed) s), not after the validator's 30 s")
        #expect(mount.storeContents("job.slow") == "old\n")
        let reason = try #require(mount.quarantineReasons.first { $0.contains("document: job.slow") })
        #expect(reason.contains("did not finish within 1 s"), "\(reason)")
        // The close was refused; the release that follows must not judge the same bytes again.
        usleep(1_500_000)
        #expect((try? String(contentsOfFile: counter, encoding: .utf8)) == "run\n", "the validator ran once")
        // The bracket keeps pgrep (and timeout, running it) from matching their own command lines.
        let survivors = try MountedStore.run(["pgrep", "-f", "[s]leep 30[.]5"], timeout: 10)
        #expect(!survivors.succeeded, "the validator and its child were killed: \(survivors.output)")
    }

    @Test func aMissingValidatorOrABadFileFailsTheMountClearly() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-badconfig-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: root + "/store", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/mnt", withIntermediateDirectories: true)
        defer {
            _ = try? MountedStore.run(["fusermount3", "-uz", root + "/mnt"], timeout: 10)
            try? FileManager.default.removeItem(atPath: root)
        }
        let missing = try Self.writeConfiguration("[types.ini]\nextensions = [\"ini\"]\ncommand = [\"docfs-no-such-validator\", \"--strict\"]\n")
        let unknown = try Self.writeConfiguration("[patterns]\n\"*.conf\" = \"tmol\"\n")
        defer { unlink(missing); unlink(unknown) }
        for (config, problem) in [(missing, "[types.ini]: the validator docfs-no-such-validator was not found in PATH"),
                                  (unknown, "[patterns] \"*.conf\" = \"tmol\": no type of that name")] {
            let result = try MountedStore.run([MountedStore.binary, "mount", "--config", config, root + "/store", root + "/mnt"], timeout: 30)
            #expect(result.status == 6, "exit status 6 for a bad configuration: \(result.status)")
            #expect(result.error.contains("docfs: configuration \(config): \(problem)"), "\(result.error)")
            let mounts = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
            #expect(!mounts.contains(root + "/mnt"), "nothing was mounted")
        }
    }

    /// `docfs types` shows what decides (issue 39): the patterns and each type with the extensions
    /// it claims, and a count of the raw rest; before, 1,093 lines, most of them raw `dyn.` ids.
    /// `--all` keeps the full listing; `docfs types FILE…` says what each file is and why.
    @Test func typesShowsWhatDecidesAndExplainsFiles() throws {
        let config = try Self.writeConfiguration(Self.configuration)
        defer { unlink(config) }
        let summary = try MountedStore.run([MountedStore.binary, "types", "--config", config], timeout: 30)
        #expect(summary.succeeded, "\(summary.error)")
        let lines = summary.output.split(separator: "\n").map(String.init)
        #expect(lines.count < 400, "\(lines.count) lines")
        #expect(!summary.output.contains("dyn."), "dynamic types are named by their MIME types")
        #expect(lines.contains { $0.contains("*.conf") && $0.contains("toml") }, "the patterns")
        #expect(lines.contains { $0.contains("net.daringfireball.markdown: ") && $0.contains(".md") }, "text's claims")
        #expect(lines.contains { $0.contains("ini (file, command:") }, "the command type")
        let rawLine = try #require(lines.first { $0.contains("other known extensions are raw") })
        let rawCount = try #require(Int(rawLine.split(separator: " ")[0]))
        let all = try MountedStore.run([MountedStore.binary, "types", "--config", config, "--all"], timeout: 30)
        let rawRows = all.output.split(separator: "\n").filter { $0.hasPrefix("*.") && $0.contains("  raw  ") }
        #expect(rawRows.count == rawCount, "--all lists each raw extension the summary counts")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-types-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder + "/Trip.textbundle", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder + "/plain.d", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let explained = try MountedStore.run(
            [MountedStore.binary, "types", "--config", config, folder + "/Trip.textbundle", folder + "/plain.d", "notes.md", "a.tar.gz", "Makefile"], timeout: 30)
        let rows = explained.output.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        #expect(rows.count == 5, "\(explained.output)")
        #expect(rows.first?.hasSuffix("validated by textbundle (a package) (textbundle reads org.textbundle.package)") == true, "\(rows)")
        #expect(rows.dropFirst().first?.hasSuffix("raw (no content type is known for its extension)") == true, "\(rows)")
        #expect(rows.contains("notes.md net.daringfireball.markdown validated by text (text reads public.text, which net.daringfireball.markdown conforms to)"), "\(rows)")
        #expect(rows.contains("a.tar.gz org.gnu.gnu-zip-archive raw (no document type reads org.gnu.gnu-zip-archive)"), "\(rows)")
        #expect(rows.contains("Makefile - raw (no extension)"), "\(rows)")
    }

    @Test func typesAndCheckReadTheConfiguration() throws {
        let config = try Self.writeConfiguration(Self.configuration)
        defer { unlink(config) }
        let mount = try MountedStore(texts: ["good.ini": "[a]\nb = 1\n", "app.conf": "x = 1\n"], arguments: ["--config", config])
        defer { mount.unmount() }

        let text = try MountedStore.run([MountedStore.binary, "types", "--config", config, "a.conf", "b.ini", "c.log", "d.yaml", "e.csv"], timeout: 30)
        let lines = text.output.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        #expect(lines == [
            "a.conf io.toml.document validated by toml (pattern *.conf)",
            "b.ini \(lines.dropFirst().first?.split(separator: " ")[1] ?? "?") validated by ini (extension .ini in the configuration)",
            "c.log public.log raw (pattern *.log)",
            "d.yaml public.yaml validated by yaml (yaml reads public.yaml)",
            "e.csv public.comma-separated-values-text validated by csv (csv reads public.comma-separated-values-text)",
        ], "\(text.output)")

        let table = try MountedStore.run([MountedStore.binary, "types", "--config", config, "--json", "--all"], timeout: 30)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(table.output.utf8)) as? [String: Any])
        #expect(json["configuration"] as? String == config)
        let types = try #require(json["types"] as? [[String: Any]]).compactMap { $0["name"] as? String }
        #expect(types == ["json", "yaml", "toml", "plist", "xml", "csv", "text", "textbundle", "ini"])
        let patterns = try #require(json["patterns"] as? [[String: String]])
        #expect(patterns.contains { $0["pattern"] == "*.conf" && $0["type"] == "toml" })
        let files = try #require(json["files"] as? [[String: Any]])
        #expect(files.contains { $0["name"] as? String == "*.toml" && $0["documentType"] as? String == "toml" })

        // A document broken beside DocFS: check (through the mount point) reports it with the
        // validator's reason, and passes once it is fixed.
        try mount.writeToStore("broken.ini", Data("no header\n".utf8))
        let check = try MountedStore.run([MountedStore.binary, "check", "--config", config, mount.mountPoint], timeout: 60)
        #expect(check.status == 1 && check.output.contains("broken.ini") && check.output.contains("MissingSectionHeaderError"), "\(check.output)\(check.error)")
        try mount.writeToStore("broken.ini", Data("[fixed]\n".utf8))
        #expect(try MountedStore.run([MountedStore.binary, "check", "--config", config, mount.mountPoint], timeout: 60).status == 0)
    }
}
