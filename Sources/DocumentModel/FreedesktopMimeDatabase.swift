import Foundation

/// The freedesktop.org shared-mime-info database (`/usr/share/mime` on Debian), read once:
/// the Linux standard source for the extensions and MIME types the built-in table lacks.
/// Only the plain `*.ext` globs are used; content sniffing is not DocFS's business.
final class FreedesktopMimeDatabase: Sendable {
    /// The database in the first of `$XDG_DATA_DIRS` (default `/usr/local/share:/usr/share`) that has one.
    static let shared: FreedesktopMimeDatabase? = {
        let dataDirectories = ProcessInfo.processInfo.environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "/usr/local/share:/usr/share"
        for directory in dataDirectories.split(separator: ":") {
            if let database = FreedesktopMimeDatabase(directory: "\(directory)/mime") { return database }
        }
        return nil
    }()

    private let mimeTypesByExtension: [String: [String]]
    private let extensionsByMimeType: [String: [String]]
    private let parentsByMimeType: [String: [String]]
    private let canonicalByAlias: [String: String]

    init?(directory: String) {
        guard let globs = try? String(contentsOfFile: directory + "/globs2", encoding: .utf8) else { return nil }
        var weighted: [String: [(weight: Int, mimeType: String)]] = [:]
        var extensionsByMimeType: [String: [String]] = [:]
        for line in globs.split(separator: "\n") where !line.hasPrefix("#") {
            // weight:mime/type:glob[:flags]
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count >= 3, let weight = Int(fields[0]) else { continue }
            let glob = fields[2]
            guard glob.hasPrefix("*."), glob.dropFirst(2).allSatisfy({ !"*?[]".contains($0) }) else { continue }
            let mimeType = String(fields[1])
            let fileExtension = glob.dropFirst(2).lowercased()
            weighted[fileExtension, default: []].append((weight, mimeType))
            if extensionsByMimeType[mimeType]?.contains(fileExtension) != true {
                extensionsByMimeType[mimeType, default: []].append(fileExtension)
            }
        }
        self.mimeTypesByExtension = weighted.mapValues { entries in
            entries.enumerated().sorted { ($0.element.weight, -$0.offset) > ($1.element.weight, -$1.offset) }
                .map(\.element.mimeType)
        }
        self.extensionsByMimeType = extensionsByMimeType
        self.parentsByMimeType = Self.pairs(in: directory + "/subclasses").reduce(into: [:]) { $0[$1.0, default: []].append($1.1) }
        self.canonicalByAlias = Dictionary(Self.pairs(in: directory + "/aliases"), uniquingKeysWith: { first, _ in first })
    }

    var allExtensions: [String] { Array(mimeTypesByExtension.keys) }

    func mimeTypes(forExtension fileExtension: String) -> [String] {
        mimeTypesByExtension[fileExtension.lowercased()] ?? []
    }

    func extensions(forMimeType mimeType: String) -> [String] {
        extensionsByMimeType[canonicalMimeType(mimeType)] ?? []
    }

    func canonicalMimeType(_ mimeType: String) -> String {
        canonicalByAlias[mimeType.lowercased()] ?? mimeType.lowercased()
    }

    func isKnown(_ mimeType: String) -> Bool {
        let canonical = canonicalMimeType(mimeType)
        return extensionsByMimeType[canonical] != nil || parentsByMimeType[canonical] != nil
    }

    /// Super-classes, nearest first. Per the spec every `text/*` is a `text/plain` and everything
    /// else an `application/octet-stream`, even where the subclasses file does not say so.
    func ancestors(ofMimeType mimeType: String) -> [String] {
        var result: [String] = []
        var pending = [canonicalMimeType(mimeType)]
        while !pending.isEmpty {
            let current = pending.removeFirst()
            var parents = parentsByMimeType[current] ?? []
            if parents.isEmpty, current.hasPrefix("text/"), current != "text/plain" { parents = ["text/plain"] }
            for parent in parents where !result.contains(parent) {
                result.append(parent)
                pending.append(parent)
            }
        }
        return result
    }

    private static func pairs(in path: String) -> [(String, String)] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            return fields.count == 2 ? (String(fields[0]), String(fields[1])) : nil
        }
    }
}
