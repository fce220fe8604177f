import ArgumentParser
import FUSE
import SystemSupport

@main
struct DocFSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "docfs",
        abstract: "Mount a document store as a file system: every file is a validated document.",
        discussion: """
            Reading a file decodes it with its document type; every write is validated the same way \
            and stored atomically, or refused with EIO and kept in the store's quarantine. \
            `docfs STORE MOUNTPOINT -o OPTIONS` mounts, as mount.fuse3 and fstab expect. \
            See docfs(1) for the read and write semantics.
            """,
        version: "docfs \(DocFSVersion.current) (libfuse \(FUSESession.libraryVersion))",
        subcommands: [MountCommand.self, UnmountCommand.self, CheckCommand.self, StatusCommand.self, VersionsCommand.self, RestoreCommand.self, CollectGarbageCommand.self, RetentionCommand.self, QuarantineCommand.self, TypesCommand.self, ParserHelperCommand.self],
        defaultSubcommand: MountCommand.self)

    /// `-V` is `--version`, as for sshfs and bindfs.
    static func main() {
        let arguments = Self.arguments.dropFirst().map { $0 == "-V" ? "--version" : $0 }
        // Every command that reads TOML (a configuration, a document) checks it in a parser helper,
        // so toml++ aborting on it is a refusal; mount and check install their own limits.
        if arguments.first != ParserHelperCommand.configuration.commandName { ParserLimitsOption.installDefaults() }
        main(Array(arguments))
    }

    /// argv as the bytes it holds, in `FileSystemPath`'s encoding. `CommandLine.arguments` decodes
    /// it as UTF-8, turning every other byte into U+FFFD: `docfs versions 'x\xff.md'` then named
    /// `x\u{FFFD}.md`, another document, and restored that one.
    private static var arguments: [String] {
        (0..<Int(CommandLine.argc)).map { index in
            CommandLine.unsafeArgv[index].map { FileSystemPath.string(fromCString: $0) } ?? ""
        }
    }
}

enum DocFSVersion {
    static let current = "0.2.0"
}
