import DocumentFS
import DocumentModel
import DocumentStore
import Foundation
import Glibc
import StandardDocuments
import SystemSupport
import Testing
import TypeConfiguration

/// The configuration file: what it maps, what it refuses to load, and the command validators it
/// declares — all without FUSE, through `DocumentTypeTable` and `DocumentLibrary`.
@Suite struct TypeConfigurationTests {
    static let iniValidator = #"import sys, configparser; configparser.ConfigParser().read_string(sys.stdin.read())"#

    static let sample = """
        [patterns]              # glob on the file name -> a built-in type or "raw"
        "*.conf" = "toml"
        "*.log" = "raw"
        "audit.log" = "text"
        "*.cfg" = "ini"

        [types.ini]
        extensions = ["ini"]
        command = ["python3", "-c", "\(iniValidator)"]
        timeout = 5
        """

    /// A pattern matches a name by its bytes, as the shell's globbing does: `?` is one byte. A
    /// name that is not UTF-8 is carried escaped (three bytes for each such byte), and `?.cfg` did
    /// not match `\xff.cfg`, which then passed the configured type by unjudged.
    @Test func aPatternMatchesANameThatIsNotUTF8ByItsBytes() throws {
        let directory = try Workspace()
        let configuration = try TypeConfiguration.load(from: try directory.write("[patterns]\n\"?.cfg\" = \"toml\"\n", to: "docfs.toml"))
        let table = DocumentTypeTable(rules: configuration.rules)
        #expect(table.verdict(forName: "x.cfg").documentType == "toml")
        #expect(table.verdict(forName: FileSystemPath.string(fromBytes: [0xFF] + Array(".cfg".utf8))).documentType == "toml")
        #expect(table.verdict(forName: "xy.cfg").documentType != "toml", "? is one byte")
    }

    @Test func patternsAndCommandTypesDecideBeforeContentTypes() throws {
        let directory = try Workspace()
        let configuration = try TypeConfiguration.load(from: try directory.write(Self.sample, to: "docfs.toml"))
        let table = DocumentTypeTable(rules: configuration.rules)
        #expect(table.verdict(forName: "app.conf").documentType == "toml")
        #expect(table.verdict(forName: "app.conf").contentType == "io.toml.document")
        #expect(table.verdict(forName: "server.log").documentType == nil, "*.log is raw")
        #expect(table.verdict(forName: "audit.log").documentType == "text", "the longer pattern wins")
        #expect(table.verdict(forName: "setup.ini").documentType == "ini")
        #expect(table.verdict(forName: "SETUP.INI").documentType == "ini", "extensions ignore case")
        #expect(table.verdict(forName: "tool.cfg").documentType == "ini", "a pattern can name a command type")
        #expect(table.verdict(forName: "notes.txt").documentType == "text", "built-in rules still apply")
        #expect(TypeConfiguration.builtIn.rules.patterns.isEmpty)
    }

    @Test(arguments: [
        ("[patterns]\n\"*.conf\" = \"tomll\"\n", "no type of that name"),
        ("[pattern]\n\"*.conf\" = \"toml\"\n", "unknown section [pattern]"),
        ("[types.ini]\nextensions = [\"ini\"]\ncomand = [\"true\"]\n", "unknown key comand"),
        ("[types.ini]\nextensions = [\"ini\"]\ncommand = [\"docfs-no-such-validator\"]\n", "the validator docfs-no-such-validator was not found in PATH"),
        ("[types.ini]\ncommand = []\n", "command must be a non-empty list"),
        ("[types.ini]\ncommand = [\"true\"]\ntimeout = 0\n", "timeout must be a number of seconds"),
        ("[types.json]\ncommand = [\"true\"]\n", "json is the name of a built-in type"),
        ("[patterns]\n\"a/*.conf\" = \"toml\"\n", "cannot be empty or contain '/'"),
        ("[patterns]\n\"*.conf\" = toml\n", "line 2, column"),
    ])
    func aBadConfigurationIsRefusedNamingFileAndProblem(text: String, problem: String) throws {
        let directory = try Workspace()
        let path = try directory.write(text, to: "docfs.toml")
        let error = try #require(throws: ConfigurationError.self) { try TypeConfiguration.load(from: path) }
        #expect(error.description.hasPrefix("configuration \(path): "))
        #expect(error.description.contains(problem), "\(error.description)")
    }

    @Test func aConfigurationOthersCanWriteOrInsideTheStoreIsRefused() throws {
        let directory = try Workspace()
        let path = try directory.write(Self.sample, to: "store/docfs.toml")
        chmod(path, 0o666)
        let writable = try #require(throws: ConfigurationError.self) { try TypeConfiguration.load(from: path) }
        #expect(writable.description.contains("writable by group or others"))
        chmod(path, 0o644)
        let inside = try #require(throws: ConfigurationError.self) {
            try TypeConfiguration.load(from: path, storePath: directory.path + "/store")
        }
        #expect(inside.description.contains("inside the store"))
        #expect(try TypeConfiguration.load(from: path, storePath: directory.path + "/elsewhere").commandTypes.count == 1)
    }

    @Test func aCommandValidatorAcceptsRefusesWithItsOwnWordsAndSeesTheDocument() throws {
        let validator = CommandValidator(command: ["python3", "-c", Self.iniValidator], executablePath: "/usr/bin/python3", timeout: 10)
        try validator.validate(Data("[main]\nkey = value\n".utf8), name: "a.ini", contentType: .data)
        let refusal = try #require(throws: CocoaError.self) {
            try validator.validate(Data("key = value without a section\n".utf8), name: "a.ini", contentType: .data)
        }
        let reason = try #require(refusal.userInfo[NSLocalizedFailureReasonErrorKey] as? String)
        #expect(reason.contains("refused by validator python3 (exit status 1)") && reason.contains("MissingSectionHeaderError"), "\(reason)")

        let echo = CommandValidator(command: ["sh", "-c", "echo \"$DOCFS_NAME $(wc -c)\" >&2; exit 3"], executablePath: "/bin/sh", timeout: 10)
        let named = try #require(throws: CocoaError.self) { try echo.validate(Data(count: 5 << 20), name: "big.bin", contentType: .data) }
        #expect((named.userInfo[NSLocalizedFailureReasonErrorKey] as? String)?.contains("big.bin 5242880") == true,
                "the whole document reaches standard input, and the name the environment")
    }

    @Test func aValidatorThatDoesNotReadItsInputDecidesByItsExitStatus() throws {
        try CommandValidator(command: ["true"], executablePath: "/bin/true", timeout: 10).validate(Data(count: 4 << 20), name: nil, contentType: .data)
        #expect(throws: CocoaError.self) {
            try CommandValidator(command: ["false"], executablePath: "/bin/false", timeout: 10).validate(Data(count: 4 << 20), name: nil, contentType: .data)
        }
    }

    @Test func aValidatorPastItsTimeLimitIsKilledWithItsChildren() throws {
        let marker = "31.\(getpid())"
        let validator = CommandValidator(command: ["sh", "-c", "sleep \(marker); exit 0"], executablePath: "/bin/sh", timeout: 1)
        let start = Date()
        let refusal = try #require(throws: CocoaError.self) { try validator.validate(Data("x".utf8), name: nil, contentType: .data) }
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed >= 1 && elapsed < 5, "refused at its limit, not when it finished (\(elapsed) s)")
        #expect((refusal.userInfo[NSLocalizedFailureReasonErrorKey] as? String)?.contains("did not finish within 1 s") == true)
        let survivors = try processes(matching: "sleep \(marker)")
        #expect(survivors.isEmpty, "the validator's own child was killed too: \(survivors)")
    }

    @Test func theLibraryChecksWithTheConfiguredTypes() throws {
        let directory = try Workspace()
        let configuration = try TypeConfiguration.load(from: try directory.write(Self.sample, to: "docfs.toml"))
        _ = try directory.write("[main]\nkey = 1\n", to: "store/good.ini")
        _ = try directory.write("no section here\n", to: "store/bad.ini")
        _ = try directory.write("a = 1\na = 2\n", to: "store/app.conf")
        _ = try directory.write("free \u{FFFD} text", to: "store/server.log")
        let library = DocumentLibrary(store: try DirectoryStore(path: directory.path + "/store"), rules: configuration.rules, readOnly: true)
        let reports = Dictionary(uniqueKeysWithValues: library.documents().map { ($0.path, library.check($0)) })
        #expect(reports["good.ini"]?.state == .valid)
        guard case .corrupt(let reason)? = reports["bad.ini"]?.state else { Issue.record("bad.ini is refused"); return }
        #expect(reason.contains("MissingSectionHeaderError"))
        guard case .corrupt(let tomlReason)? = reports["app.conf"]?.state else { Issue.record("app.conf is TOML"); return }
        #expect(tomlReason.contains("line 2"))
        #expect(reports["server.log"] == nil, "a raw file is not a document")
    }

    /// The library opens and saves a document as the mount classifies it: `app.conf` is TOML by the
    /// configuration's pattern. Before, the library classified by extension alone, so it refused
    /// to open app.conf as a TOML document the mount serves as one.
    @Test func theLibraryClaimsAsTheMountDoes() throws {
        let directory = try Workspace()
        let configuration = try TypeConfiguration.load(from: try directory.write(Self.sample, to: "docfs.toml"))
        _ = try directory.write("a = 1\n", to: "store/app.conf")
        _ = try directory.write("a = 1\n", to: "store/server.log")
        let library = DocumentLibrary(store: try DirectoryStore(path: directory.path + "/store"), rules: configuration.rules)
        let opened = try library.open(TOMLDocument.self, at: "app.conf")
        #expect(opened.contentType.conforms(to: TOMLDocument.readableContentTypes[0]))
        try opened.save()
        #expect(try String(contentsOfFile: directory.path + "/store/app.conf", encoding: .utf8) == "a = 1\n")
        #expect(throws: DocumentLibrary.LibraryError.self) { try library.open(TOMLDocument.self, at: "server.log") }
    }

    private func processes(matching text: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc").compactMap { entry in
            guard Int(entry) != nil, let line = try? String(contentsOfFile: "/proc/\(entry)/cmdline", encoding: .utf8) else { return nil }
            let command = line.replacingOccurrences(of: "\0", with: " ")
            return command.contains(text) ? command : nil
        }
    }
}

/// A fresh directory for one test, removed after it.
final class Workspace {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-config-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `text` to `name` (made with mode 644) and returns its path.
    func write(_ text: String, to name: String) throws -> String {
        let file = path + "/" + name
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o644)
        return file
    }
}
