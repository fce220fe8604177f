import Foundation
import Testing

/// Renames and removals by a user who does not own what they move answer as on a local disk
/// (issue 27, pjdfstest `rename/21.t`): in open folders, in sticky folders (`/tmp`'s 1777), for
/// files and folders, within a folder and across two. Each step runs on a local folder and through
/// an `allow_other` mount, and every answer must be the same.
@Suite struct RenamePermissionTests {
    /// Prints one line per step: the step and its outcome ("ok" or the error's name).
    private static let script = #"""
        import errno, os, sys
        top = sys.argv[1]
        def as_nobody(label, step):
            pid = os.fork()
            if pid == 0:
                try:
                    os.setgroups([]); os.setgid(65534); os.setuid(65534)
                    step(); print(label, "ok", flush=True)
                except OSError as e:
                    print(label, errno.errorcode[e.errno], flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
        def as_root(label, step):
            try:
                step(); print(label, "ok", flush=True)
            except OSError as e:
                print(label, errno.errorcode[e.errno], flush=True)
        def made(path, kind, mode, owner):
            if kind == "dir": os.mkdir(path)
            else:
                with open(path, "w") as f: f.write("{}\n")
            os.chmod(path, mode); os.chown(path, owner, owner)
        for folder_mode in (0o777, 0o1777):
            a = os.path.join(top, f"a{folder_mode:o}"); b = os.path.join(top, f"b{folder_mode:o}")
            for d in (a, b): made(d, "dir", folder_mode, 0)
            for kind, name in (("dir", "d"), ("file", "f.json")):
                for owner in (0, 65534):
                    mine = "nobody's" if owner else "root's"
                    tag = f"{folder_mode:o} {mine} {kind}"
                    src = os.path.join(a, name); made(src, kind, 0o700 if kind == "dir" else 0o644, owner)
                    as_nobody(f"{tag}: rename within", lambda: os.rename(src, src + ".2"))
                    cur = src + ".2" if os.path.lexists(src + ".2") else src
                    as_nobody(f"{tag}: move to another folder", lambda: os.rename(cur, os.path.join(b, name)))
                    cur = os.path.join(b, name) if os.path.lexists(os.path.join(b, name)) else cur
                    victim = os.path.join(a, "victim.json"); made(victim, "file", 0o666, 0)
                    if kind == "file": as_nobody(f"{tag}: over root's file", lambda: os.rename(cur, victim))
                    cur = victim if kind == "file" and not os.path.lexists(cur) else cur
                    as_nobody(f"{tag}: remove", lambda: (os.rmdir if kind == "dir" else os.unlink)(cur))
                    as_root(f"{tag}: root removes what is left", lambda: [os.rmdir(p) if os.path.isdir(p) else os.unlink(p) for p in (os.path.join(a, n) for n in os.listdir(a)) ] + [os.rmdir(p) if os.path.isdir(p) else os.unlink(p) for p in (os.path.join(b, n) for n in os.listdir(b))])
                    print(tag, "left:", sorted(os.listdir(a)), sorted(os.listdir(b)), flush=True)
        """#

    @Test func aNonOwnerRenamesAndRemovesAsOnALocalDisk() throws {
        let mount = try MountedStore(texts: [:], arguments: ["-o", "allow_other"])
        defer { mount.unmount() }
        let local = mount.root.appendingPathComponent("local").path
        try FileManager.default.createDirectory(atPath: local, withIntermediateDirectories: true)
        let onDisk = try mount.run(["python3", "-c", Self.script, local])
        let throughMount = try mount.run(["python3", "-c", Self.script, mount.mountPoint])
        #expect(onDisk.succeeded && onDisk.error.isEmpty, "\(onDisk.error)")
        #expect(throughMount.error.isEmpty, "\(throughMount.error)")
        let disk = onDisk.output.split(separator: "\n")
        let fuse = throughMount.output.split(separator: "\n")
        #expect(disk.count == 4 * 6 + 4 * 5, "\(onDisk.output)")
        for (expected, got) in zip(disk, fuse) { #expect(got == expected) }
        #expect(disk.count == fuse.count)
    }
}
