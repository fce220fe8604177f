import Foundation
import Glibc
import Testing

/// A daemon killed at any moment leaves every document old or new, never torn.
@Suite(.timeLimit(.minutes(10)))
struct CrashTests {
    /// Version `version` of document `index`: large enough that a write takes many requests.
    static func document(_ index: Int, version: Int) -> String {
        "{\"doc\": \(index), \"version\": \(version), \"pad\": \"\(String(repeating: "x", count: 200_000 + index))\"}\n"
    }

    @Test func sigkillDuringAStreamOfWritesLeavesEveryDocumentOldOrNew() throws {
        let count = 12
        var files: [String: String] = [:]
        for index in 0..<count { files["d\(index).json"] = Self.document(index, version: 0) }
        let mount = try MountedStore(texts: files)
        defer { mount.unmount() }

        let writer = try ChildProcess(["timeout", "-k", "5", "60", "python3", "-c", """
            import os, sys
            version = 1
            while True:
                for index in range(\(count)):
                    body = '{"doc": %d, "version": %d, "pad": "%s"}\\n' % (index, version, 'x' * (200000 + index))
                    try:
                        with open('d%d.json' % index, 'w') as f:
                            for start in range(0, len(body), 4096):
                                f.write(body[start:start + 4096]); f.flush()
                    except OSError:
                        sys.exit(0)
                version += 1
            """], in: mount.mountPoint, capture: false)
        // Once a round of commits has landed in the store (the second has begun), kill the daemon
        // in the middle of the writes that follow.
        #expect(MountedStore.waitUntil(seconds: 50) {
            let stored = mount.storeContents("d0.json").flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            return (stored?["version"] as? Int ?? 0) >= 2
        })
        mount.crash()
        writer.wait()

        try mount.mount()
        var versions: Set<Int> = []
        for index in 0..<count {
            let stored = try #require(mount.storeContents("d\(index).json"))
            let object = try JSONSerialization.jsonObject(with: Data(stored.utf8)) as? [String: Any]
            let version = try #require(object?["version"] as? Int, "d\(index).json is torn: \(stored.prefix(80))")
            #expect(stored == Self.document(index, version: version), "d\(index).json is exactly one written version")
            #expect(try mount.read("d\(index).json") == stored)
            versions.insert(version)
        }
        #expect(versions.contains { $0 > 0 }, "the writer got some versions in before the crash")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: mount.store).filter { $0 != ".docfs" && !$0.hasSuffix(".json") }
        #expect(leftovers.isEmpty, "no temporary files in the store: \(leftovers)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mount.inStore(".docfs/staging")).isEmpty, "interrupted writes were moved to the quarantine")
    }
}
