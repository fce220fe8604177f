import Foundation

/// The type declarations of an Info.plist (`UTExportedTypeDeclarations`, `UTImportedTypeDeclarations`),
/// so the same Info.plist an app ships on Apple platforms declares its types here.
enum InfoPlistDeclarations {
    /// The declarations in the plist at `url`.
    static func read(from url: URL) throws -> [UTTypeDeclaration] {
        let data = try Data(contentsOf: url)
        guard let plist = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
            throw CocoaError(.propertyListReadCorrupt, userInfo: [NSURLErrorKey: url, NSLocalizedFailureReasonErrorKey: "the Info.plist is not a dictionary"])
        }
        let exported = (plist["UTExportedTypeDeclarations"] as? [[String: Any]] ?? []).compactMap { declaration($0, kind: .exported) }
        let imported = (plist["UTImportedTypeDeclarations"] as? [[String: Any]] ?? []).compactMap { declaration($0, kind: .imported) }
        return exported + imported
    }

    private static func declaration(_ entry: [String: Any], kind: UTTypeDeclaration.Kind) -> UTTypeDeclaration? {
        guard let identifier = entry["UTTypeIdentifier"] as? String else { return nil }
        let tags = entry["UTTypeTagSpecification"] as? [String: Any] ?? [:]
        return UTTypeDeclaration(
            identifier: identifier, kind: kind, conformsTo: strings(entry["UTTypeConformsTo"]),
            filenameExtensions: strings(tags["public.filename-extension"]), mimeTypes: strings(tags["public.mime-type"]),
            description: entry["UTTypeDescription"] as? String,
            referenceURL: (entry["UTTypeReferenceURL"] as? String).flatMap(URL.init(string:)),
            version: (entry["UTTypeVersion"] as? NSNumber)?.intValue ?? (entry["UTTypeVersion"] as? String).flatMap { Int($0) })
    }

    /// A plist value that is a string or an array of strings.
    private static func strings(_ value: Any?) -> [String] {
        if let single = value as? String { return [single] }
        return value as? [String] ?? []
    }

    /// The main bundle's Info.plist files: the one in the main bundle, and those in the SwiftPM
    /// resource bundles (`*.resources`) beside the executable, where an app's Info.plist resource lands.
    static func mainBundlePlists() -> [URL] {
        let main = Bundle.main.bundleURL
        var found: [URL] = []
        if let plist = Bundle.main.url(forResource: "Info", withExtension: "plist") { found.append(plist) }
        let bundles = (try? FileManager.default.contentsOfDirectory(at: main, includingPropertiesForKeys: nil)) ?? []
        for bundle in bundles where bundle.pathExtension == "resources" {
            guard let enumerator = FileManager.default.enumerator(at: bundle, includingPropertiesForKeys: nil) else { continue }
            for case let url as URL in enumerator where url.lastPathComponent == "Info.plist" { found.append(url) }
        }
        return found
    }
}

extension UTType {
    /// DocFS extension, not on Apple platforms: registers the `UTExportedTypeDeclarations` and
    /// `UTImportedTypeDeclarations` of the Info.plist at `url`. (The main bundle's are read on first
    /// use of any type, as Apple platforms read them.)
    public static func registerDeclarations(fromInfoPlistAt url: URL) throws {
        register(try InfoPlistDeclarations.read(from: url))
    }
}
