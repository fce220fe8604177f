import DocumentModel
import Glibc
import StandardDocuments

/// A line on standard error.
func complain(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

#if FUZZING

/// The target libFuzzer drives, from DOCFS_FUZZ_TARGET (scripts/fuzz sets it).
private let selectedTarget: FuzzTarget? = getenv("DOCFS_FUZZ_TARGET").flatMap { FuzzTarget(rawValue: String(cString: $0)) }

/// libFuzzer's driver (its `main`, as a function: SwiftPM links an executable's own entry point).
@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzer(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// One input.
private func fuzzOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    selectedTarget?.run(start.map { Data(bytes: $0, count: count) } ?? Data())
    return 0
}

/// One input, for libFuzzer's own `main`: a debug build renames the Swift entry point below, and
/// the linker then takes libFuzzer's, which calls this.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzerTestOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard selectedTarget != nil else {
        complain("docfs-fuzz: set DOCFS_FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
        exit(2)
    }
    return fuzzOneInput(start, count)
}

@main
enum Fuzz {
    static func main() {
        guard selectedTarget != nil else {
            complain("docfs-fuzz: set DOCFS_FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
            exit(2)
        }
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runFuzzer(&argc, &argv) { start, count in fuzzOneInput(start, count) })
    }
}

#else

/// Without libFuzzer: replays inputs (the regression inputs a fuzzing run found, the seed corpus)
/// through a target, the C and C++ parsers in `ParserSandbox` helpers as a mount runs them, so an
/// input that crashes a parser is a refusal here as it is in a mount.
///
///     docfs-fuzz TARGET PATH...     replay every file (folders: every file in them)
///     docfs-fuzz list               the targets
@main
enum FuzzReplay {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "parser-helper", arguments.count == 3, let memory = Int(arguments[2]) {
            exit(ParserHelper.serve(memoryLimit: memory))
        }
        if arguments.first == "list" {
            print(FuzzTarget.allCases.map(\.rawValue).joined(separator: "\n"))
            return
        }
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
            complain("usage: docfs-fuzz TARGET PATH... | docfs-fuzz list")
            exit(2)
        }
        ParserSandbox.install(command: ["/proc/self/exe", "parser-helper"], limits: ParserSandbox.Limits())
        var count = 0
        for path in arguments.dropFirst() {
            for file in files(at: path) {
                guard let data = FileManager.default.contents(atPath: file) else {
                    complain("docfs-fuzz: cannot read \(file)")
                    exit(1)
                }
                target.run(data)
                count += 1
            }
        }
        print("docfs-fuzz: \(target.rawValue): \(count) inputs replayed, none crashed")
    }

    private static func files(at path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.sorted().map { path + "/" + $0 }
    }
}

#endif
