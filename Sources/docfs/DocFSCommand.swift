import ArgumentParser

@main
struct DocFSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "docfs",
        abstract: "Mount a document store as a file system: every file is a validated document.",
        discussion: """
            Reading a file decodes it with its document type; every write is validated the same way \
            and stored atomically, or refused with EIO and kept in the store's quarantine. \
            See docfs(1) for the read and write semantics.
            """,
        version: DocFSVersion.current,
        subcommands: [MountCommand.self, UnmountCommand.self, StatusCommand.self])
}

enum DocFSVersion {
    static let current = "0.1.0"
}
