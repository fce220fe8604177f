import Foundation
import Testing

/// Everyone gets back their own refused saves, and only their own (issue 27): on a shared
/// `allow_other` mount, a refused save by `nobody` is nobody's, listed and restored by nobody
/// through the mount's read-only `.docfs/quarantine`, where root's refused saves do not show.
///
/// Before, the quarantine was a root-only folder in the store and `.docfs` was EACCES through the
/// mount: a user other than root could not reach their own bytes.
@Suite struct QuarantineViewTests {
    private static let invalid = "{\"unterminated\": "

    @Test func aUserListsAndRestoresTheirOwnRefusedSaveAndSeesNobodyElses() throws {
        let mount = try MountedStore(texts: [:], arguments: ["-o", "allow_other"])
        defer { mount.unmount() }
        // The docfs tool as nobody may not reach the build folder: a copy nobody can run.
        let tool = mount.root.appendingPathComponent("docfs-tool").path
        try FileManager.default.copyItem(atPath: MountedStore.binary, toPath: tool)
        func asNobody(_ arguments: [String]) throws -> MountedStore.Result {
            try MountedStore.run(["runuser", "-u", "nobody", "--"] + arguments, timeout: 60)
        }

        #expect(try mount.shell("mkdir -m 777 shared && printf '{}' > shared/data.json && chmod 666 shared/data.json").succeeded)
        // The refusal comes at close, whose error a shell's redirection ignores: Python reports it.
        let save = "import sys\nwith open(sys.argv[1], 'w') as f: f.write(sys.argv[2])"
        let nobodysSave = try asNobody(["python3", "-c", save, mount.inMount("shared/data.json"), Self.invalid])
        #expect(nobodysSave.error.contains("Input/output error"), "the invalid save is refused: \(nobodysSave.error)")
        #expect(try mount.run(["python3", "-c", save, mount.inMount("root.json"), "root's secret {"]).error.contains("Input/output error"))

        // On disk the item and its note are nobody's; the folders above stay root's.
        let onDisk = mount.quarantined
        #expect(onDisk.count == 2)
        let nobodysItem = try #require(onDisk.first { $0.hasSuffix("shared%2Fdata.json") })
        let rootsItem = try #require(onDisk.first { $0.hasSuffix("root.json") })
        let owner = try FileManager.default.attributesOfItem(atPath: mount.inStore(".docfs/quarantine/" + nobodysItem))[.ownerAccountID] as? Int
        #expect(owner == 65534)

        // Through the mount nobody sees their item and its note, nothing of root's.
        let listing = try asNobody(["ls", "-a", mount.inMount(".docfs/quarantine")])
        #expect(listing.output.split(separator: "\n").map(String.init) == [".", "..", nobodysItem, nobodysItem + ".reason"])
        #expect(try asNobody(["cat", mount.inMount(".docfs/quarantine/" + nobodysItem)]).output == Self.invalid)
        let rootsBytes = try asNobody(["cat", mount.inMount(".docfs/quarantine/" + rootsItem)])
        #expect(!rootsBytes.succeeded && rootsBytes.error.contains("No such file"), "\(rootsBytes.error)")
        // Root looked it up first: the kernel must not hand nobody root's cached name.
        #expect(try mount.run(["stat", mount.inMount(".docfs/quarantine/" + rootsItem)]).succeeded)
        #expect(!(try asNobody(["stat", mount.inMount(".docfs/quarantine/" + rootsItem)])).succeeded)

        // The docfs tool, as nobody, through the mount point.
        let listed = try asNobody([tool, "quarantine", "list", "--json", mount.mountPoint])
        #expect(listed.succeeded, "\(listed.error)")
        let entries = try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]] ?? []
        #expect(entries.map { $0["name"] as? String } == [nobodysItem])
        #expect(entries.first?["document"] as? String == "shared/data.json")
        let restored = try asNobody([tool, "quarantine", "restore", mount.mountPoint, nobodysItem])
        #expect(restored.succeeded, "\(restored.error)")
        let copy = restored.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(copy.hasPrefix(mount.inMount("shared/data.json.refused-")))
        #expect(try String(contentsOfFile: copy, encoding: .utf8) == Self.invalid)
        #expect(try FileManager.default.attributesOfItem(atPath: copy)[.ownerAccountID] as? Int == 65534)
        #expect(try mount.read("shared/data.json") == "{}", "the document kept its version")

        // Root sees both, also in `docfs status` of the mount point (on a PostgreSQL mount too,
        // whose status read a temporary mirror's empty quarantine before); nobody can change the view.
        let all = try mount.run([MountedStore.binary, "quarantine", "list", "--json", mount.mountPoint])
        #expect((try JSONSerialization.jsonObject(with: Data(all.output.utf8)) as? [Any])?.count == 2)
        let status = try mount.run([MountedStore.binary, "status", "--json", mount.mountPoint])
        #expect((try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any])?["quarantineItems"] as? Int == 2, "\(status.output) \(status.error)")
        for attempt in [
            ["rm", mount.inMount(".docfs/quarantine/" + rootsItem)],
            ["touch", mount.inMount(".docfs/quarantine/new")],
            ["mv", mount.inMount(".docfs/quarantine/" + rootsItem), mount.inMount("taken.json")],
            ["chmod", "666", mount.inMount(".docfs/quarantine/" + rootsItem)],
        ] {
            let result = try mount.run(attempt)
            #expect(!result.succeeded && result.error.contains("Read-only file system"), "\(attempt): \(result.error)")
        }
        #expect(!(try asNobody(["sh", "-c", "echo x >> \(mount.inMount(".docfs/quarantine/" + nobodysItem))"])).succeeded)
        #expect(mount.quarantined.count == 2)
    }

    /// A stage starts as the whole stored document: a user who may write a document but not read
    /// it (mode 0622) must not get to read it by saving one bad byte. Such refused bytes stay root's.
    @Test func aWriterWhoCannotReadTheDocumentDoesNotGetItFromTheQuarantine() throws {
        let mount = try MountedStore(texts: [:], arguments: ["-o", "allow_other"])
        defer { mount.unmount() }
        #expect(try mount.shell("printf '{\"secret\": \"root only\"}' > wo.json && chmod 622 wo.json").succeeded)
        let save = "import os\nfd = os.open('\(mount.inMount("wo.json"))', os.O_WRONLY)\nos.write(fd, b'#')\nos.close(fd)"
        let refused = try MountedStore.run(["runuser", "-u", "nobody", "--", "python3", "-c", save], timeout: 30)
        #expect(refused.error.contains("Input/output error"), "the save is refused: \(refused.error)")
        let item = try #require(mount.quarantined.first { $0.hasSuffix("wo.json") })
        let owner = try FileManager.default.attributesOfItem(atPath: mount.inStore(".docfs/quarantine/" + item))[.ownerAccountID] as? Int
        #expect(owner == 0, "kept for root")
        let listing = try MountedStore.run(["runuser", "-u", "nobody", "--", "ls", "-A", mount.inMount(".docfs/quarantine")], timeout: 30)
        #expect(listing.succeeded && listing.output.isEmpty, "nobody sees nothing: \(listing.output)")
    }
}
