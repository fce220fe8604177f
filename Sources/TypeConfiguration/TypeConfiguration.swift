import DocumentFS
import DocumentModel
import Foundation
import Glibc
import StandardDocuments
import SystemSupport
import TOMLKit

/// Which files are documents of which type, as a configuration file (TOML) says on top of the
/// built-in types: name patterns mapped to a type or to `raw`, and command types that validate with
/// an external program.
///
///     [patterns]            # glob on the file name -> a type name (`docfs types`) or "raw"
///     "*.conf" = "toml"
///
///     [types.ini]           # a command type
///     extensions = ["ini"]
///     command = ["python3", "-c", "import sys, configparser; configparser.ConfigParser().read_string(sys.stdin.read())"]
///     timeout = 5           # seconds; past it the save is refused
///
/// Commands run with the daemon's privileges, so they are read only from a file the mounting user
/// controls: owned by root or by that user, writable by nobody else, and outside the store.
public struct TypeConfiguration: Sendable {
    /// Read when a command is given no `--config` and the file exists.
    public static let systemPath = "/etc/docfs/docfs.toml"
    static let defaultTimeout = 10.0
    static let maximumTimeout = 3600.0

    /// The file this came from; nil for the built-in types alone.
    public let path: String?
    public let rules: DocumentTypeRules
    /// The command types, by name.
    public let commandTypes: [String: CommandValidator]

    /// The built-in types, no configuration file.
    public static let builtIn = TypeConfiguration(path: nil, rules: DocumentTypeRules(types: StandardDocumentTypes.all), commandTypes: [:])

    /// The configuration a command uses: `explicitPath` when given, else the system file when it
    /// exists, else the built-in types. `storePath` (when known) is checked not to hold the file.
    public static func resolve(explicitPath: String?, storePath: String?) throws -> TypeConfiguration {
        if let explicitPath { return try load(from: explicitPath, storePath: storePath) }
        guard FileManager.default.fileExists(atPath: systemPath) else { return builtIn }
        return try load(from: systemPath, storePath: storePath)
    }

    public static func load(from path: String, storePath: String? = nil) throws -> TypeConfiguration {
        try checkTrusted(path, storePath: storePath)
        let text: String
        do {
            // By the path's own bytes, as `checkTrusted` judged it (Foundation read a UTF-8
            // look-alike of a path that is not UTF-8); a link is followed, as it was.
            let data = try FileIO.readFile(path, followingLinks: true)
            guard let decoded = String(data: data, encoding: .utf8) else { throw ConfigurationError(path, "not UTF-8 text") }
            text = decoded
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(path, "cannot be read: \(error.localizedDescription)")
        }
        return try parse(text, path: path)
    }

    /// The configuration `text` holds; `path` names the file in errors.
    public static func parse(_ text: String, path: String) throws -> TypeConfiguration {
        // Checked first as any TOML document is (in a helper process, where the command has one):
        // bytes that make toml++ abort are refused there, and never reach the parse below, which
        // runs in the command itself.
        do {
            if case .refused(let reason) = try ParserCheck.toml.verdict(Data(text.utf8)) {
                throw ConfigurationError(path, reason.replacingOccurrences(of: "not valid TOML: ", with: ""))
            }
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(path, (error as NSError).localizedFailureReason ?? "\(error)")
        }
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigurationError(path, "line \(error.source.begin.line), column \(error.source.begin.column): \(error.description)")
        }
        return try ConfigurationReader(path: path).read(table)
    }

    /// A configuration names programs to run as the daemon's user: it must be that user's (or
    /// root's), writable by no one else, and not a file inside the store it configures.
    private static func checkTrusted(_ path: String, storePath: String?) throws {
        var status = stat()
        guard FileSystemPath.withCString(path, { stat($0, &status) }) == 0 else {
            throw ConfigurationError(path, "cannot be read: \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else { throw ConfigurationError(path, "is not a regular file") }
        guard status.st_uid == 0 || status.st_uid == geteuid() else {
            throw ConfigurationError(path, "is owned by uid \(status.st_uid); a configuration that names commands must belong to root or to the user running docfs (uid \(geteuid()))")
        }
        guard status.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw ConfigurationError(path, "is writable by group or others (mode \(String(status.st_mode & 0o7777, radix: 8))); run chmod go-w on it")
        }
        if let storePath, let real = FileSystemPath.withCString(path, { realpath($0, nil) }),
           let realStore = FileSystemPath.withCString(storePath, { realpath($0, nil) })
        {
            defer { free(real); free(realStore) }
            // By bytes (`StorePath.isWithin`): a first name beginning with a combining mark joins
            // the "/" before it into one Character, and `hasPrefix` would say it is outside.
            let file = FileSystemPath.string(fromCString: real), store = FileSystemPath.string(fromCString: realStore)
            if store == "/" || (StorePath.isWithin(file, store) && !FileSystemPath.same(file, store)) {
                throw ConfigurationError(path, "is inside the store \(store); commands are never read from the store")
            }
        }
    }
}

/// A configuration file that cannot be used, with the file and the place named.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let path: String
    public let problem: String

    init(_ path: String, _ problem: String) {
        self.path = path
        self.problem = problem
    }

    public var description: String { "configuration \(path): \(problem)" }
}

/// Turns the parsed table into rules, refusing anything it does not understand: a typo in a key
/// must not silently leave files unvalidated.
private struct ConfigurationReader {
    let path: String

    func read(_ table: TOMLTable) throws -> TypeConfiguration {
        for key in table.keys where !["patterns", "types"].contains(key) {
            throw ConfigurationError(path, "unknown section [\(key)] (known: [patterns], [types.NAME])")
        }
        var commandTypes: [String: CommandValidator] = [:]
        var declared: [String: DocumentType] = [:]
        var extensions: [String: DocumentType] = [:]
        if let value = table["types"] {
            guard let types = value.table else { throw ConfigurationError(path, "types must be tables: [types.NAME]") }
            for name in types.keys.sorted() {
                let (type, validator, typeExtensions) = try commandType(named: name, types[name])
                declared[name] = type
                commandTypes[name] = validator
                for fileExtension in typeExtensions {
                    if let other = extensions[fileExtension.lowercased()] {
                        throw ConfigurationError(path, "[types.\(name)]: extension \(fileExtension) is already given to type \(other.name)")
                    }
                    extensions[fileExtension.lowercased()] = type
                }
            }
        }
        var patterns: [NamePattern] = []
        if let value = table["patterns"] {
            guard let table = value.table else { throw ConfigurationError(path, "[patterns] must be a table of \"GLOB\" = \"TYPE\"") }
            for glob in table.keys {
                guard let target = table[glob]?.string else {
                    throw ConfigurationError(path, "[patterns] \"\(glob)\": the value must be a type name in quotes")
                }
                guard !glob.isEmpty, !glob.contains("/") else {
                    throw ConfigurationError(path, "[patterns] \"\(glob)\": a pattern matches a file name, so it cannot be empty or contain '/'")
                }
                if target == "raw" {
                    patterns.append(NamePattern(glob: glob, target: .raw))
                } else if let type = declared[target] ?? StandardDocumentTypes.named(target) {
                    patterns.append(NamePattern(glob: glob, target: .document(type)))
                } else {
                    let known = (StandardDocumentTypes.all.map(\.name) + declared.keys.sorted() + ["raw"]).joined(separator: ", ")
                    throw ConfigurationError(path, "[patterns] \"\(glob)\" = \"\(target)\": no type of that name (known: \(known))")
                }
            }
        }
        let rules = DocumentTypeRules(types: StandardDocumentTypes.all, patterns: patterns, extensions: extensions)
        return TypeConfiguration(path: path, rules: rules, commandTypes: commandTypes)
    }

    private func commandType(named name: String, _ value: (any TOMLValueConvertible)?) throws -> (DocumentType, CommandValidator, [String]) {
        let section = "[types.\(name)]"
        guard let table = value?.table else { throw ConfigurationError(path, "\(section) must be a table") }
        guard name != "raw", StandardDocumentTypes.named(name) == nil else {
            throw ConfigurationError(path, "\(section): \(name) is the name of a built-in type; choose another")
        }
        for key in table.keys where !["extensions", "command", "timeout", "environment", "user"].contains(key) {
            throw ConfigurationError(path, "\(section): unknown key \(key) (known: extensions, command, timeout, environment, user)")
        }
        guard let commandArray = table["command"]?.array, !commandArray.isEmpty,
              case let command = commandArray.compactMap(\.string), command.count == commandArray.count,
              let program = command.first, !program.isEmpty
        else {
            throw ConfigurationError(path, "\(section): command must be a non-empty list of strings, the program first (no shell is used)")
        }
        let extensions: [String]
        if let value = table["extensions"] {
            guard let array = value.array, case let strings = array.compactMap(\.string), strings.count == array.count,
                  strings.allSatisfy({ !$0.isEmpty && !$0.contains(".") && !$0.contains("/") })
            else {
                throw ConfigurationError(path, "\(section): extensions must be a list of extensions without the dot, like [\"ini\"]")
            }
            extensions = strings
        } else {
            extensions = []
        }
        var timeout = TypeConfiguration.defaultTimeout
        if let value = table["timeout"] {
            guard let seconds = value.double ?? value.int.map(Double.init), seconds > 0, seconds <= TypeConfiguration.maximumTimeout else {
                throw ConfigurationError(path, "\(section): timeout must be a number of seconds, more than 0 and at most \(Int(TypeConfiguration.maximumTimeout))")
            }
            timeout = seconds
        }
        // A relative path would be looked up in the daemon's working folder when the configuration
        // is read, and run after a chdir to "/": another program, or none.
        if program.utf8.contains(UInt8(ascii: "/")) && program.utf8.first != UInt8(ascii: "/") {
            throw ConfigurationError(path, "\(section): the validator \(program) is a relative path; give an absolute path, or a bare name to look up in PATH")
        }
        var passedVariables: [String] = []
        if let value = table["environment"] {
            let isName = { (name: String) in
                !name.isEmpty && name.utf8.allSatisfy { $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
                    && !(0x30...0x39).contains(name.utf8.first ?? 0)
            }
            guard let array = value.array, case let names = array.compactMap(\.string), names.count == array.count, names.allSatisfy(isName) else {
                throw ConfigurationError(path, "\(section): environment must be a list of variable names to pass on, like [\"HOME\"]")
            }
            passedVariables = names
        }
        var user: Ownership?
        if let value = table["user"] {
            guard let name = value.string, !name.isEmpty else {
                throw ConfigurationError(path, "\(section): user must be the name of a user to run the validator as, like \"nobody\"")
            }
            guard let account = Self.account(named: name) else {
                throw ConfigurationError(path, "\(section): user \(name) does not exist on this machine")
            }
            user = account
        }
        guard let executable = Self.executable(program) else {
            let searched = program.contains("/") ? "" : " in PATH (\(ProcessInfo.processInfo.environment["PATH"] ?? ""))"
            throw ConfigurationError(path, "\(section): the validator \(program) was not found\(searched) or is not executable")
        }
        let validator = CommandValidator(command: command, executablePath: executable, timeout: timeout, passedVariables: passedVariables, user: user)
        let contentTypes = extensions.compactMap { UTType(filenameExtension: $0) }
        let type = DocumentType.validator(named: name, readableContentTypes: contentTypes.isEmpty ? [.data] : contentTypes) { configuration in
            guard let contents = configuration.file.regularFileContents else {
                throw CommandValidator.refusal("a command type validates files, not folders")
            }
            try validator.validate(contents, name: configuration.file.filename, contentType: configuration.contentType)
        }
        return (type, validator, extensions)
    }

    /// `program` as an absolute path: as written when it has a '/', else the first executable of
    /// that name in PATH — resolved once, when the configuration is read, so a missing validator
    /// fails the mount rather than every save.
    /// The user `name` and that user's primary group, from the password database.
    private static func account(named name: String) -> Ownership? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(name, &entry, &buffer, buffer.count, &found) == 0, found != nil else { return nil }
        return Ownership(userID: entry.pw_uid, groupID: entry.pw_gid)
    }

    private static func executable(_ program: String) -> String? {
        // The configuration is text: a command is checked as the UTF-8 it is run by (`CommandValidator`).
        if program.utf8.contains(UInt8(ascii: "/")) { return access(program, X_OK) == 0 ? program : nil }
        let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in searchPath.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(program)"
            var status = stat()
            if stat(candidate, &status) == 0, status.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
