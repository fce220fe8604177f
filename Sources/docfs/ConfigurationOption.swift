import ArgumentParser
import Foundation
import SystemSupport
import TypeConfiguration

/// `--config FILE`: the type configuration a command uses (see `TypeConfiguration`); without it,
/// a mount's `-o config=FILE`, else /etc/docfs/docfs.toml when that exists.
struct ConfigurationOption: ParsableArguments {
    @Option(name: .customLong("config"), help: ArgumentHelp(
        "Type configuration (TOML): name patterns mapped to types or raw, and validator commands (default: /etc/docfs/docfs.toml when it exists).",
        valueName: "file"))
    var path: String?

    /// The configuration; a problem with it is printed (naming the file and the place) and ends the
    /// command with status 6.
    func load(storePath: String?, fallback: String? = nil) throws -> TypeConfiguration {
        do {
            return try TypeConfiguration.resolve(explicitPath: (path ?? fallback).map(absolute), storePath: storePath)
        } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data("docfs: \(error.description)\n".utf8))
            throw ExitStatus.badConfiguration
        }
    }

    private func absolute(_ path: String) -> String {
        FileSystemPath.absolute(path) ?? path
    }
}
