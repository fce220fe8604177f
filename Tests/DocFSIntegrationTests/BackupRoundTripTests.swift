import Foundation
import Glibc
import Testing

/// Backup and copy tools restore a tree into the mount and out of it exactly: content, types, modes,
/// owners, times, hard links, symbolic links, FIFOs and extended attributes.
@Suite(.timeLimit(.minutes(10)))
struct BackupRoundTripTests {
    /// Makes the source tree under `root` (outside any mount).
    static let makeTree = """
        import os, sys
        root = sys.argv[1]
        def write(path, data, mode=0o644, times=(1_500_000_000, 1_500_000_000)):
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, 'wb') as f: f.write(data)
            os.chmod(full, mode); os.utime(full, times)
        write('notes/todo.md', b'# To do\\n- back up\\n', 0o600, (1_400_000_000, 1_400_000_001))
        write('settings.json', b'{"theme": "dark"}\\n')
        write('Trip.textbundle/info.json', b'{"version": 2}')
        write('Trip.textbundle/text.md', b'# Trip\\n')
        write('Trip.textbundle/assets/photo.bin', bytes(range(256)) * 64)
        write('data/blob.bin', os.urandom(100_000), 0o640)
        write(b'data/\\xff-not-utf8.bin'.decode('utf-8', 'surrogateescape'), b'bytes in the name')
        os.link(os.path.join(root, 'data/blob.bin'), os.path.join(root, 'data/blob-link.bin'))
        os.symlink('../settings.json', os.path.join(root, 'notes/settings-link'))
        os.mkfifo(os.path.join(root, 'data/pipe'), 0o600)
        os.setxattr(os.path.join(root, 'notes/todo.md'), 'user.color', b'blue')
        os.setxattr(os.path.join(root, 'data'), 'user.purpose', b'archive')
        os.chown(os.path.join(root, 'settings.json'), 1234, 5678)
        # Old times everywhere (rsync leaves the time of a special file made in the same second alone).
        for item in ('data/pipe', 'notes/settings-link', 'notes', 'data', 'Trip.textbundle/assets', 'Trip.textbundle'):
            os.utime(os.path.join(root, item), (1_300_000_000, 1_300_000_000), follow_symlinks=False)
        """

    /// Prints the differences between two trees (type, mode, owner, mtime, size, content, link
    /// target, user xattrs, hard-link groups); nothing when they are equal.
    static let compareTrees = """
        import os, sys, stat, hashlib
        def describe(root):
            entries, inodes = {}, {}
            for directory, subdirectories, files in os.walk(root):
                for name in subdirectories + files:
                    full = os.path.join(directory, name)
                    relative = os.path.relpath(full, root)
                    st = os.lstat(full)
                    kind = stat.S_IFMT(st.st_mode)
                    record = [oct(st.st_mode), st.st_uid, st.st_gid]
                    if not stat.S_ISDIR(st.st_mode): record.append(st.st_mtime_ns)
                    if stat.S_ISREG(st.st_mode):
                        record.append(hashlib.sha256(open(full, 'rb').read()).hexdigest())
                        inodes.setdefault(st.st_ino, []).append(relative)
                    if stat.S_ISLNK(st.st_mode): record.append(os.readlink(full))
                    else: record.append(sorted((a, os.getxattr(full, a)) for a in os.listxattr(full) if a.startswith('user.')))
                    entries[relative] = record
            links = sorted(sorted(group) for group in inodes.values() if len(group) > 1)
            return entries, links
        (a, a_links), (b, b_links) = describe(sys.argv[1]), describe(sys.argv[2])
        for path in sorted(set(a) | set(b)):
            if a.get(path) != b.get(path): print('differs:', repr(path), a.get(path), b.get(path))
        if a_links != b_links: print('hard links differ:', a_links, b_links)
        """

    private func makeTree(_ mount: MountedStore) throws -> String {
        let source = mount.root.appendingPathComponent("source").path
        try #require(try mount.run(["python3", "-c", Self.makeTree, source]).succeeded)
        return source
    }

    private func differences(_ first: String, _ second: String, _ mount: MountedStore) throws -> String {
        let result = try mount.run(["python3", "-c", Self.compareTrees, first, second])
        let found = result.output + result.error
        if !found.isEmpty { print(found) }
        return found
    }

    @Test func rsyncIntoAndOutOfTheMountIsExact() throws {
        let mount = try MountedStore(texts: [:])
        defer { mount.unmount() }
        let source = try makeTree(mount)
        let into = try mount.run(["rsync", "-aHAX", source + "/", mount.inMount("copy") + "/"])
        #expect(into.status == 0 && into.error.isEmpty, "rsync in: \(into.status) \(into.error)")
        #expect(try differences(source, mount.inMount("copy"), mount) == "")
        let back = mount.root.appendingPathComponent("back").path
        let out = try mount.run(["rsync", "-aHAX", mount.inMount("copy") + "/", back + "/"])
        #expect(out.status == 0 && out.error.isEmpty, "rsync out: \(out.status) \(out.error)")
        #expect(try differences(source, back, mount) == "")
        let again = try mount.run(["rsync", "-aHAXi", source + "/", mount.inMount("copy") + "/"])
        #expect(again.succeeded && again.output.isEmpty, "a second rsync finds nothing to copy: \(again.output)")
        // diff calls any two FIFOs different, even on one disk; the comparison above covers it.
        #expect(try mount.run(["diff", "-r", "--no-dereference", "--exclude=pipe", source, mount.inMount("copy")]).succeeded)
    }

    @Test func tarOutOfTheMountAndBackInIsExact() throws {
        let mount = try MountedStore(texts: [:])
        defer { mount.unmount() }
        let source = try makeTree(mount)
        #expect(try mount.run(["cp", "-a", source, mount.inMount("original")]).succeeded)
        #expect(try differences(source, mount.inMount("original"), mount) == "", "cp -a into the mount")
        let archive = mount.root.appendingPathComponent("backup.tar").path
        let create = try mount.run(["tar", "--xattrs", "--xattrs-include=user.*", "-cf", archive, "-C", mount.inMount("original"), "."])
        #expect(create.status == 0 && create.error.isEmpty, "tar c: \(create.error)")
        #expect(try mount.run(["mkdir", mount.inMount("restored")]).succeeded)
        let extract = try mount.run(["tar", "--xattrs", "--xattrs-include=user.*", "--same-owner", "-xpf", archive, "-C", mount.inMount("restored")])
        #expect(extract.status == 0 && extract.error.isEmpty, "tar x: \(extract.error)")
        #expect(try differences(source, mount.inMount("restored"), mount) == "")
        let listing = try mount.run(["tar", "--xattrs", "-tvf", archive]).output
        #expect(!listing.contains("docfs"), "DocFS's own attributes are not archived")
    }
}
