import ArgumentParser
import StandardDocuments

/// `--parser-time-limit` and `--parser-memory`: the bounds of the helper processes the built-in
/// types' C and C++ parsers (TOML, YAML, XML, property lists) run in, for a mount and `docfs check`.
struct ParserLimitsOption: ParsableArguments {
    @Option(help: ArgumentHelp("Seconds one TOML, YAML, XML or property list check may take before the document is refused.", valueName: "seconds"))
    var parserTimeLimit = 30.0

    @Option(help: ArgumentHelp("Memory (address space) a TOML, YAML, XML or property list check may use: bytes, or with K, M, G.", valueName: "size"))
    var parserMemory = "2G"

    func validate() throws {
        guard parserTimeLimit > 0 else { throw ValidationError("--parser-time-limit must be positive") }
        guard let memory = ByteCount.parse(parserMemory), memory >= 256 << 20 else {
            throw ValidationError("--parser-memory '\(parserMemory)' is not a size of 256M or more (examples: 512M, 2G)")
        }
    }

    /// The arguments that give a daemonized copy of the command the same limits.
    var arguments: [String] { ["--parser-time-limit", String(parserTimeLimit), "--parser-memory", parserMemory] }

    /// From now on, this process runs those parsers in helpers with these limits.
    func install() {
        Self.install(ParserSandbox.Limits(seconds: parserTimeLimit, memory: Int(ByteCount.parse(parserMemory) ?? 2 << 30)))
    }

    /// The same with the default limits, for the commands that take no options for them.
    static func installDefaults() { install(ParserSandbox.Limits()) }

    private static func install(_ limits: ParserSandbox.Limits) {
        ParserSandbox.install(command: ["/proc/self/exe", ParserHelperCommand.configuration.commandName ?? "parser-helper"], limits: limits)
    }
}
