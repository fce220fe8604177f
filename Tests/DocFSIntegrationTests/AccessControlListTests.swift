import Foundation
import Glibc
import Testing

/// POSIX ACLs set through the mount are enforced through it, as on a local disk: the man page's
/// SECURITY promise ("what a user could not read or change in the store, they cannot through the
/// mount"). Each script runs once in the mount and once in a folder of the local disk, and the
/// two must answer alike.
@Suite(.timeLimit(.minutes(10)))
struct AccessControlListTests {
    /// Runs `script` (as root, with `$1` the folder to work in) in the mount and in a local folder.
    private func inBoth(_ script: String) throws -> (docfs: String, local: String) {
        let local = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-acl-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: local, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: local) }
        let mount = try MountedStore(texts: [:], arguments: ["-o", "allow_other"])
        defer { mount.unmount() }
        for folder in [local, mount.mountPoint] { chmod(folder, 0o755) }
        let docfs = try MountedStore.run(["bash", "-c", script, "acl", mount.mountPoint], timeout: 60)
        let expected = try MountedStore.run(["bash", "-c", script, "acl", local], timeout: 60)
        return (docfs.output + docfs.error, expected.output + expected.error)
    }

    /// Before: setfacl succeeded and `ls` showed `+`, but the kernel was never asked to enforce
    /// ACLs (FUSE_CAP_POSIX_ACL), so a user the ACL denied read the document through the mount.
    @Test func aUserAnACLDeniesCannotReadOrWriteTheDocument() throws {
        let (docfs, local) = try inBoth("""
            cd "$1" && umask 022 && echo '# secret' > notes.md && setfacl -m u:nobody:--- notes.md
            runuser -u nobody -- cat notes.md >/dev/null 2>&1 && echo "nobody read it" || echo "nobody cannot read it"
            runuser -u nobody -- sh -c 'echo x >> notes.md' 2>/dev/null && echo "nobody wrote it" || echo "nobody cannot write it"
            setfacl -m u:nobody:r-- notes.md
            runuser -u nobody -- cat notes.md
            getfacl -c notes.md; stat -c '%a' notes.md
            # A save (a new file under the name, in DocFS's store) keeps the ACL.
            setfacl -m u:nobody:--- notes.md && echo '# saved' > notes.md && sed -i 's/saved/edited/' notes.md
            runuser -u nobody -- cat notes.md >/dev/null 2>&1 && echo "nobody read the save" || echo "nobody cannot read the save"
            getfacl -c notes.md; cat notes.md
            """)
        #expect(docfs == local, "DocFS:\n\(docfs)\nlocal disk:\n\(local)")
        #expect(local.contains("nobody cannot read it\nnobody cannot write it\n# secret\n"), "\(local)")
        #expect(local.contains("nobody cannot read the save"), "\(local)")
    }

    /// A folder's default ACL is inherited by what is made in it (documents, raw files, folders),
    /// and the creator's umask then does not apply, as on a local disk; elsewhere the umask does.
    @Test func aFoldersDefaultACLIsInheritedAndTheUmaskAppliesElsewhere() throws {
        let (docfs, local) = try inBoth("""
            cd "$1" && mkdir shared && setfacl -d -m u::rwx,g::rwx,o::---,u:nobody:--- shared
            for m in 022 077; do (umask $m; echo '{}' > shared/doc$m.json; echo x > shared/raw$m.bin; mkdir shared/dir$m; echo '{}' > plain$m.json); done
            for f in shared/doc022.json shared/raw077.bin shared/dir022; do getfacl -c $f; done
            stat -c '%a %n' shared/* plain*
            runuser -u nobody -- cat shared/doc022.json >/dev/null 2>&1 && echo "nobody read it" || echo "nobody cannot read it"
            """)
        #expect(docfs == local, "DocFS:\n\(docfs)\nlocal disk:\n\(local)")
        #expect(local.contains("user:nobody:---") && local.contains("nobody cannot read it") && local.contains("600 plain077.json"), "\(local)")
    }

    /// A version keeps the ACL its document had when it was saved, and the kernel judges it: a user
    /// the ACL kept out of the document cannot read its versions either (the view showed none).
    @Test func aVersionKeepsItsDocumentsACL() throws {
        let mount = try MountedStore(texts: [:], arguments: ["-o", "allow_other"])
        defer { mount.unmount() }
        chmod(mount.mountPoint, 0o755)
        #expect(try mount.shell("umask 022 && echo one > a.md && setfacl -m u:nobody:--- a.md && echo two > a.md && echo three > a.md").succeeded)
        let versions = try mount.run(["ls", mount.inMount(".versions/a.md")]).output.split(separator: "\n").map(String.init)
        #expect(versions.count == 2)
        for version in versions {
            let read = try MountedStore.run(["runuser", "-u", "nobody", "--", "cat", mount.inMount(".versions/a.md/" + version)], timeout: 30)
            #expect(!read.succeeded && read.error.contains("Permission denied"), "\(version): \(read.output)\(read.error)")
            #expect(try MountedStore.run(["runuser", "-u", "daemon", "--", "cat", mount.inMount(".versions/a.md/" + version)], timeout: 30).succeeded)
        }
        // An ACL set now closes the versions saved before it too: who may read the document now.
        #expect(try mount.shell("umask 022 && echo one > b.md && echo two > b.md && echo three > b.md && setfacl -m u:nobody:--- b.md").succeeded)
        let earlier = try MountedStore.run(["runuser", "-u", "nobody", "--", "sh", "-c", "cat \(mount.inMount(".versions/b.md"))/*"], timeout: 30)
        #expect(!earlier.succeeded && earlier.error.contains("Permission denied"), "\(earlier.output)\(earlier.error)")
        #expect(try MountedStore.run(["runuser", "-u", "daemon", "--", "sh", "-c", "cat \(mount.inMount(".versions/b.md"))/*"], timeout: 30).output == "one\ntwo\n")
    }
}
