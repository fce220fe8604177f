import Foundation
import Glibc
import Testing

/// No document can take the mount down (issue 23): the built-in types' C and C++ parsers run in
/// helper processes, so a parser that aborts refuses one save and every other user goes on.
@Suite(.timeLimit(.minutes(10)))
struct ParserContainmentTests {
    /// A valid TOML document but for one control byte in an array-of-tables header: toml++ fails an
    /// assertion on it and aborts. Saved through a mount, it killed the daemon, and every user of
    /// the mount got "Transport endpoint is not connected" until a remount. TOML allows no such
    /// byte anywhere, so it is now refused before toml++ sees it.
    static let controlByteInTableHeader = Data("title = \"DocFS\"\n\n[owner]\nname = \"Tom\"\n\n[[\u{08}]]\nname = \"x\"\nvalue = 1\n".utf8)

    /// A time with a stray character where its hour starts: toml++ fails another assertion
    /// (`parse_time`: `is_decimal_digit(*cp)`) and aborts. Found by `scripts/fuzz toml`; it is the
    /// parser's own bug, contained by the helper process the check runs in.
    static let parserKiller = Data("date = 1979-05-27T~7:32:00Z\n".utf8)

    @Test func theSaveThatKilledTheMountIsRefusedWithItsPlace() throws {
        let mount = try MountedStore(texts: ["notes.txt": "still here\n"])
        defer { mount.unmount() }
        let source = mount.root.appendingPathComponent("evil.toml").path
        try Self.controlByteInTableHeader.write(to: URL(fileURLWithPath: source))
        let copy = try mount.run(["cp", source, mount.inMount("evil.toml")], timeout: 30)
        #expect(!copy.succeeded && copy.error.contains("Input/output error"), "\(copy.status) \(copy.error)")
        #expect(mount.daemon?.isRunning == true, "the daemon died")
        #expect(try mount.read("notes.txt") == "still here\n")
        let reason = try #require(mount.quarantineReasons.first { $0.contains("document: evil.toml") })
        #expect(reason.contains("line 6, column 3: the control character U+0008 is not allowed in TOML"), "\(reason)")
    }

    @Test func aTOMLDocumentThatCrashesTheParserIsOneRefusedSave() throws {
        let mount = try MountedStore(texts: ["notes.txt": "still here\n", "settings.toml": "title = \"old\"\n"])
        defer { mount.unmount() }
        #expect(try mount.save("settings.toml", Self.parserKiller) == "EIO")
        #expect(mount.daemon?.isRunning == true, "the daemon died")
        #expect(try mount.read("notes.txt") == "still here\n")
        #expect(mount.storeContents("settings.toml") == "title = \"old\"\n")
        let reason = try #require(mount.quarantineReasons.first { $0.contains("document: settings.toml") })
        #expect(reason.contains("the TOML parser crashed on this document (SIGABRT)") && reason.contains("Assertion"), "\(reason)")
        #expect(try mount.save("settings.toml", Data("title = \"new\"\n".utf8)) == "ok", "the next save of a valid document works")
        #expect(mount.storeContents("settings.toml") == "title = \"new\"\n")
        // The same bytes put in the store beside DocFS: reading them is refused, and nothing else.
        try Self.parserKiller.write(to: URL(fileURLWithPath: mount.inStore("beside.toml")))
        #expect(try mount.read("beside.toml") == nil)
        #expect(mount.daemon?.isRunning == true)
        #expect(try mount.read("settings.toml") == "title = \"new\"\n")
        // docfs check reports it and goes on.
        let check = try MountedStore.run([MountedStore.binary, "check", mount.store], timeout: 60)
        #expect(check.status == 1 && check.output.contains("corrupt  beside.toml (toml): the TOML parser crashed"), "\(check.output)\(check.error)")
        #expect(check.output.contains("checked 3 documents in \(mount.store): 2 decode, 1 do not"), "\(check.output)")
    }

    @Test func anXMLDocumentThatCrashesLibxml2IsOneRefusedSave() throws {
        // Found by `scripts/fuzz xml`: an encoding declaration of UTF-7 and a NUL byte in an
        // unterminated attribute make Debian 12's libxml2 (2.9.14) dereference a bad pointer in
        // xmlSwitchToEncoding. In the daemon that was a SIGSEGV of the whole mount.
        var document = Data("<?xml version=\"1.0\" encoding=\"UTF-7\"?>\n<a b=\"x>".utf8)
        document.append(0)
        let mount = try MountedStore(texts: ["notes.txt": "still here\n", "feed.xml": "<feed/>\n"])
        defer { mount.unmount() }
        #expect(try mount.save("feed.xml", document) == "EIO")
        #expect(mount.daemon?.isRunning == true, "the daemon died")
        #expect(try mount.read("notes.txt") == "still here\n")
        let reason = try #require(mount.quarantineReasons.first { $0.contains("document: feed.xml") })
        #expect(reason.contains("the XML parser crashed on this document (SIGSEGV)"), "\(reason)")
        #expect(try mount.save("feed.xml", Data("<feed><entry/></feed>\n".utf8)) == "ok")
    }

    @Test func aCommandValidatorThatKillsItselfRefusesOneSave() throws {
        let config = try TypeConfigurationMountTests.writeConfiguration("""
            [types.fragile]
            extensions = ["fragile"]
            command = ["sh", "-c", 'if grep -q crash; then kill -ABRT $$; fi']
            timeout = 10

            """)
        defer { unlink(config) }
        let mount = try MountedStore(texts: ["a.fragile": "fine\n", "notes.txt": "still here\n"], arguments: ["--config", config])
        defer { mount.unmount() }
        #expect(try mount.save("a.fragile", Data("crash\n".utf8)) == "EIO")
        #expect(mount.daemon?.isRunning == true)
        #expect(mount.storeContents("a.fragile") == "fine\n")
        #expect(try mount.read("notes.txt") == "still here\n")
        #expect(try mount.save("a.fragile", Data("fine again\n".utf8)) == "ok")
        #expect(mount.storeContents("a.fragile") == "fine again\n")
    }

    @Test func theParserHelperRunsAsNobodyWithinItsLimits() throws {
        let mount = try MountedStore(texts: ["a.yaml": "a: 1\n"], arguments: ["--parser-memory", "300M"])
        defer { mount.unmount() }
        #expect(try mount.save("a.yaml", Data("a: 2\n".utf8)) == "ok")
        let daemon = try #require(mount.daemon)
        // The helper that checked the save waits for the next one, a child of the daemon (of the
        // worker thread that started it: each thread lists its own children).
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task")
        let children = threads.map { (try? String(contentsOfFile: "/proc/\(daemon.pid)/task/\($0)/children", encoding: .utf8)) ?? "" }.joined(separator: " ")
        let helper = try #require(children.split(separator: " ").compactMap { Int32($0) }.first { pid in
            ((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").contains("parser-helper")
        }, "no parser helper among the daemon's children: \(children)")
        let status = try String(contentsOfFile: "/proc/\(helper)/status", encoding: .utf8)
        let uid = status.split(separator: "\n").first { $0.hasPrefix("Uid:") } ?? ""
        #expect(uid.split(separator: "\t").dropFirst().allSatisfy { $0 == "65534" }, "\(uid)")
        #expect(status.contains("NoNewPrivs:\t1"))
        let limits = try String(contentsOfFile: "/proc/\(helper)/limits", encoding: .utf8).split(separator: "\n")
        let addressSpace = limits.first { $0.hasPrefix("Max address space") } ?? ""
        #expect(addressSpace.contains("\(300 << 20)"), "\(addressSpace)")
        let core = limits.first { $0.hasPrefix("Max core file size") } ?? ""
        #expect(core.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).first == "0", "\(core)")
        let environment = try String(contentsOfFile: "/proc/\(helper)/environ", encoding: .utf8).split(separator: "\0")
        #expect(Set(environment) == ["PATH=/usr/bin:/bin", "LANG=C.UTF-8", "SWIFT_BACKTRACE=enable=no"], "\(environment)")
    }
}
