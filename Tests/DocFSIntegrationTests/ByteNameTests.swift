import Foundation
import Glibc
import Testing

/// Names are bytes (issue 35): two names are two files whenever their bytes differ, as on ext4 —
/// the NFC and NFD spellings of "café", a name that is not UTF-8 and its U+FFFD look-alike — in
/// the mount, in `.versions`, in `docfs versions`/`restore` and on a PostgreSQL store. Before, a
/// name travelled as a Swift `String` in places, whose `==` and hashing are Unicode canonical
/// equivalence and whose decoding of argv turns every invalid byte into U+FFFD: each test here
/// failed on 159b5ca. Runs on directory stores and, in `scripts/test`, on PostgreSQL stores too.
@Suite(.timeLimit(.minutes(5)))
struct ByteNameTests {
    static let nfc: [UInt8] = Array("caf\u{E9}.txt".utf8)
    static let nfd: [UInt8] = Array("cafe\u{301}.txt".utf8)

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// For each folder/name given in hex (`folder` may be empty): the item's inode, content, and the
    /// contents of its versions through `.versions`, oldest first; as JSON keyed by the hex path.
    static let describeScript = """
        import json, os, sys
        mount = sys.argv[1].encode()
        report = {}
        for item in sys.argv[2:]:
            path = bytes.fromhex(item)
            full = os.path.join(mount, path)
            entry = {}
            try:
                entry["ino"] = os.lstat(full).st_ino
                entry["content"] = open(full, "rb").read().decode("utf-8", "replace")
            except OSError as e:
                entry["error"] = e.strerror
            folder = os.path.join(mount, b".versions", path)
            try:
                names = sorted(os.listdir(folder))
                entry["versions"] = [open(os.path.join(folder, n), "rb").read().decode("utf-8", "replace") for n in names]
            except OSError:
                entry["versions"] = []
            parent = os.path.dirname(full)
            entry["listed"] = os.path.basename(full) in os.listdir(parent)
            report[item] = entry
        print(json.dumps(report))
        """

    struct Item: Decodable, Equatable {
        var ino: UInt64?
        var content: String?
        var error: String?
        var versions: [String]
        var listed: Bool
    }

    static func describe(_ mount: MountedStore, _ paths: [[UInt8]]) throws -> [String: Item] {
        let result = try mount.python(describeScript, arguments: [mount.mountPoint] + paths.map(hex))
        #expect(result.succeeded, "\(result.error)")
        return (try? JSONDecoder().decode([String: Item].self, from: Data(result.output.utf8))) ?? [:]
    }

    /// Writes `text` to each byte path, through the mount, in one open-write-close each; the errno
    /// names of the writes that failed.
    static func write(_ mount: MountedStore, _ writes: [([UInt8], String)]) throws -> [String] {
        let script = """
            import errno, os, sys
            mount = sys.argv[1].encode()
            failed = []
            for i in range(2, len(sys.argv), 2):
                path = os.path.join(mount, bytes.fromhex(sys.argv[i]))
                try:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "wb") as f: f.write(bytes.fromhex(sys.argv[i + 1]))
                except OSError as e:
                    failed.append(sys.argv[i] + ":" + errno.errorcode.get(e.errno, str(e.errno)))
            print("\\n".join(failed))
            """
        let arguments = writes.flatMap { [hex($0.0), hex(Array($0.1.utf8))] }
        let result = try mount.python(script, arguments: [mount.mountPoint] + arguments)
        #expect(result.succeeded, "\(result.error)")
        return result.output.split(separator: "\n").map(String.init)
    }

    /// Runs `docfs` with arguments of any bytes (argv is bytes; a Swift string cannot hold them).
    static func docfs(_ mount: MountedStore, _ arguments: [[UInt8]]) throws -> MountedStore.Result {
        let script = """
            import subprocess, sys
            done = subprocess.run([bytes.fromhex(a) for a in sys.argv[1:]], capture_output=True)
            sys.stdout.write(done.stdout.decode("utf-8", "replace")); sys.stderr.write(done.stderr.decode("utf-8", "replace"))
            sys.exit(done.returncode)
            """
        return try mount.python(script, arguments: ([Array(MountedStore.binary.utf8)] + arguments).map(hex))
    }

    static func inMount(_ mount: MountedStore, _ path: [UInt8]) -> [UInt8] { Array(mount.mountPoint.utf8) + [UInt8(ascii: "/")] + path }

    @Test func theNFCAndNFDSpellingsOfANameAreTwoDocumentsWithTheirOwnVersions() throws {
        let mount = try MountedStore(texts: [:])
        defer { mount.unmount() }
        let nfc = Self.nfc, nfd = Self.nfd
        #expect(try Self.write(mount, [(nfc, "nfc one\n"), (nfd, "nfd one\n"), (nfc, "nfc two\n"), (nfd, "nfd two\n")]) == [])
        let items = try Self.describe(mount, [nfc, nfd])
        let first = items[Self.hex(nfc)], second = items[Self.hex(nfd)]
        #expect(first?.content == "nfc two\n" && second?.content == "nfd two\n", "\(items)")
        #expect(first?.ino != nil && first?.ino != second?.ino, "two files, two numbers: \(items)")
        #expect(first?.versions == ["nfc one\n"] && second?.versions == ["nfd one\n"], "each its own versions: \(items)")
        // `.versions` lists both names (it listed one for the two).
        let listing = try mount.python("import os, sys; print(sorted(n.hex() for n in os.listdir(os.path.join(sys.argv[1].encode(), b'.versions'))))", arguments: [mount.mountPoint])
        #expect(listing.output.contains(Self.hex(nfc)) && listing.output.contains(Self.hex(nfd)), "\(listing.output)")
        try mount.remount()
        #expect(try Self.describe(mount, [nfc, nfd]) == items, "the same after a remount")
    }

    /// Item 1 on the store where it broke: the mirror's state was keyed by `String`, so two mounts
    /// and every remount showed one inode for both and served one's bytes under the other's name;
    /// saves to the NFC name then failed with a false conflict.
    @Test func theNFCAndNFDSpellingsAreTwoFilesOnEveryMountOfAPostgreSQLStore() throws {
        let cluster = try PostgresCluster()
        let location = cluster.location(store: "names")
        let first = try MountedStore(postgres: location)
        let second = try MountedStore(postgres: location)
        defer { first.unmount(); second.unmount() }
        let nfc = Self.nfc, nfd = Self.nfd
        #expect(try Self.write(first, [(nfc, "nfc one\n"), (nfd, "nfd one\n")]) == [])
        let expected = ["nfc one\n", "nfd one\n"]
        #expect(MountedStore.waitUntil { ((try? Self.describe(second, [nfc, nfd])) ?? [:]).values.compactMap(\.content).sorted() == expected })
        let seen = try Self.describe(second, [nfc, nfd])
        #expect(seen[Self.hex(nfc)]?.content == "nfc one\n" && seen[Self.hex(nfd)]?.content == "nfd one\n", "\(seen)")
        #expect(seen[Self.hex(nfc)]?.ino != seen[Self.hex(nfd)]?.ino, "\(seen)")
        // A save to each name through the other mount: no false conflict.
        #expect(try Self.write(second, [(nfc, "nfc two\n"), (nfd, "nfd two\n")]) == [])
        #expect(MountedStore.waitUntil { (try? Self.describe(first, [nfc]))?[Self.hex(nfc)]?.content == "nfc two\n" })
        for mount in [first, second] {
            try mount.remount()
            let items = try Self.describe(mount, [nfc, nfd])
            #expect(items[Self.hex(nfc)]?.content == "nfc two\n" && items[Self.hex(nfd)]?.content == "nfd two\n", "after a remount: \(items)")
            #expect(items[Self.hex(nfc)]?.ino != items[Self.hex(nfd)]?.ino)
            #expect(items[Self.hex(nfc)]?.versions == ["nfc one\n"] && items[Self.hex(nfd)]?.versions == ["nfd one\n"], "\(items)")
        }
        #expect(try Self.write(first, [(nfc, "nfc three\n")]) == [], "a save after the remount")
    }

    /// Item 3: `docfs versions` and `restore` took their path through Swift's argv, which turns
    /// `\xff` into U+FFFD: they found no versions for `x\xff.md`, and where `x\u{FFFD}.md` exists,
    /// listed and restored that other document.
    @Test func versionsAndRestoreTakeAPathsBytesAsGiven() throws {
        let mount = try MountedStore(texts: [:])
        defer { mount.unmount() }
        let raw: [UInt8] = [UInt8(ascii: "x"), 0xFF] + Array(".md".utf8)
        let lookalike: [UInt8] = Array("x\u{FFFD}.md".utf8)
        #expect(try Self.write(mount, [(raw, "raw one\n"), (lookalike, "lookalike one\n"), (raw, "raw two\n"), (lookalike, "lookalike two\n")]) == [])
        let listed = try Self.docfs(mount, [Array("versions".utf8), Array("--json".utf8), Self.inMount(mount, raw)])
        #expect(listed.succeeded, "\(listed.error)")
        let entries = (try? JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]]) ?? []
        #expect(entries.count == 1, "\(listed.output)")
        let name = entries.first?["name"] as? String ?? "?"
        let restored = try Self.docfs(mount, [Array("restore".utf8), Self.inMount(mount, raw), Array("--at".utf8), Array(name.utf8)])
        #expect(restored.succeeded, "\(restored.error)")
        let items = try Self.describe(mount, [raw, lookalike])
        #expect(items[Self.hex(raw)]?.content == "raw one\n", "the restore put the version back: \(items)")
        #expect(items[Self.hex(lookalike)]?.content == "lookalike two\n", "the look-alike is untouched: \(items)")
        // The quarantine takes the bytes too: an unknown name is an error, never another's entry.
        let missing = try Self.docfs(mount, [Array("versions".utf8), Self.inMount(mount, [UInt8(ascii: "x"), 0xFE] + Array(".md".utf8))])
        #expect(!missing.succeeded || missing.output.contains("no versions"), "\(missing.output)")
    }

    /// A name that begins with a combining mark, below a folder: `/` and the mark are one Swift
    /// `Character`, so splitting a path on "/" by characters kept the folder and the name as one.
    @Test func aNameBeginningWithACombiningMarkIsItsOwnFileInAFolder() throws {
        let mount = try MountedStore(texts: [:])
        defer { mount.unmount() }
        let name: [UInt8] = Array("d/\u{301}x.txt".utf8)
        let renamed: [UInt8] = Array("d/\u{301}y.txt".utf8)
        #expect(try Self.write(mount, [(name, "one\n"), (name, "two\n")]) == [])
        var items = try Self.describe(mount, [name])
        #expect(items[Self.hex(name)]?.content == "two\n" && items[Self.hex(name)]?.versions == ["one\n"], "\(items)")
        let moved = try mount.python("import os, sys; os.rename(bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2]))", arguments: [Self.hex(name), Self.hex(renamed)])
        #expect(moved.succeeded, "\(moved.error)")
        try mount.remount()
        items = try Self.describe(mount, [renamed])
        #expect(items[Self.hex(renamed)]?.content == "two\n" && items[Self.hex(renamed)]?.listed == true, "\(items)")
    }
}
