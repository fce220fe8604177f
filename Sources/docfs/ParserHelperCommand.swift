import ArgumentParser
import StandardDocuments

/// `docfs parser-helper`: the process a mount or `docfs check` runs its C and C++ parsers in (see
/// `ParserSandbox`). Started by docfs itself, never by hand: its standard input is the socket the
/// checks arrive on.
struct ParserHelperCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parser-helper", abstract: "Serve parser checks on standard input (started by docfs itself).", shouldDisplay: false)

    @Option(help: "The helper's address-space limit, in bytes.")
    var memoryLimit: Int

    func run() throws {
        let status = ParserHelper.serve(memoryLimit: memoryLimit)
        if status != 0 { throw ExitCode(status) }
    }
}
