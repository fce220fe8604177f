import SystemSupport
import Foundation
import Synchronization

/// Where every `UTType` is resolved: the built-in system table, the app's registered declarations,
/// the freedesktop MIME database for tags neither knows, and dynamic types for the rest.
final class UTTypeRegistry: Sendable {
    /// The registry, with the main bundle's Info.plist declarations read in, as Apple platforms do.
    static let shared: UTTypeRegistry = {
        let registry = UTTypeRegistry()
        for plist in InfoPlistDeclarations.mainBundlePlists() {
            if let declarations = try? InfoPlistDeclarations.read(from: plist) { registry.register(declarations) }
        }
        return registry
    }()

    private struct State {
        var appDeclarations = DeclarationIndex()
        /// Resolved infos by identifier; cleared whenever declarations change.
        var resolved: [String: UTTypeInfo] = [:]
    }

    private let systemDeclarations = DeclarationIndex(SystemTypeTable.declarations)
    private let state = OrderedMutex(.leaf, State())

    func register(_ declarations: [UTTypeDeclaration]) {
        state.withLock { state in
            for declaration in declarations { state.appDeclarations.insert(declaration) }
            state.resolved.removeAll()
        }
    }

    /// Every filename extension a declaration (the app's, the system's) or the MIME database names.
    var knownFilenameExtensions: [String] {
        let declared = state.withLock { $0.appDeclarations.filenameExtensions } + systemDeclarations.filenameExtensions
        return Array(Set(declared + (FreedesktopMimeDatabase.shared?.allExtensions ?? []))).sorted()
    }

    func info(forIdentifier identifier: String) -> UTTypeInfo? {
        state.withLock { state in resolve(identifier, in: &state) }
    }

    /// A type named by an app that no declaration describes (see `UTType(exportedAs:)`).
    func undeclaredInfo(identifier: String, conformingTo parent: UTType) -> UTTypeInfo {
        UTTypeInfo(
            identifier: identifier, directSupertypeIdentifiers: [parent.identifier],
            allSupertypeIdentifiers: parent.info.allSupertypeIdentifiers.union([parent.identifier]),
            tags: [:], localizedDescription: nil, isDeclared: false, isDynamic: false)
    }

    func types(tag: String, tagClass: UTTagClass, conformingTo supertype: UTType?) -> [UTType] {
        let key = tag.lowercased()
        func accepts(_ type: UTType) -> Bool { supertype.map { type.conforms(to: $0) } ?? true }

        let declared: [UTType] = state.withLock { state in
            let identifiers = state.appDeclarations.identifiers(tag: key, tagClass: tagClass)
                + systemDeclarations.identifiers(tag: key, tagClass: tagClass)
            var seen = Set<String>()
            return identifiers.compactMap { identifier in
                guard seen.insert(identifier).inserted else { return nil }
                return resolve(identifier, in: &state).map(UTType.init(info:))
            }
        }
        let matching = declared.filter(accepts)
        if !matching.isEmpty { return matching }

        if let fromDatabase = typeFromMimeDatabase(tag: key, tagClass: tagClass), accepts(fromDatabase) {
            return [fromDatabase]
        }
        let parent = supertype ?? .data
        return [dynamicType(tags: [tagClass: [tag]], conformingTo: [parent.identifier])]
    }

    /// A tag only shared-mime-info knows: its MIME type may be one a declared type carries (then that
    /// type), otherwise a dynamic type conforming to the nearest declared MIME ancestor.
    private func typeFromMimeDatabase(tag: String, tagClass: UTTagClass) -> UTType? {
        guard let database = FreedesktopMimeDatabase.shared else { return nil }
        let mimeType: String
        var tags: [UTTagClass: [String]]
        switch tagClass {
        case .filenameExtension:
            guard let found = database.mimeTypes(forExtension: tag).first else { return nil }
            mimeType = found
            tags = [.filenameExtension: [tag], .mimeType: [found]]
        case .mimeType:
            mimeType = database.canonicalMimeType(tag)
            let extensions = database.extensions(forMimeType: mimeType)
            guard !extensions.isEmpty || database.isKnown(mimeType) else { return nil }
            tags = [.mimeType: [tag]]
            if !extensions.isEmpty { tags[.filenameExtension] = extensions }
        default:
            return nil
        }
        for candidate in [mimeType] + database.ancestors(ofMimeType: mimeType) {
            let declared = state.withLock { state in
                (state.appDeclarations.identifiers(tag: candidate, tagClass: .mimeType)
                    + systemDeclarations.identifiers(tag: candidate, tagClass: .mimeType)).first
                    .flatMap { resolve($0, in: &state) }
            }
            guard let declared else { continue }
            if candidate == mimeType { return UTType(info: declared) }
            return dynamicType(tags: tags, conformingTo: [declared.identifier])
        }
        return dynamicType(tags: tags, conformingTo: [UTType.data.identifier])
    }

    private func dynamicType(tags: [UTTagClass: [String]], conformingTo parents: [String]) -> UTType {
        let identifier = DynamicTypeIdentifier.encode(tags: tags, conformingTo: parents)
        if let info = info(forIdentifier: identifier) { return UTType(info: info) }
        return UTType(info: undeclaredInfo(identifier: identifier, conformingTo: .data))
    }

    private func resolve(_ identifier: String, in state: inout State) -> UTTypeInfo? {
        if let cached = state.resolved[identifier] { return cached }
        let info: UTTypeInfo
        if let declaration = state.appDeclarations.declaration(identifier)
            ?? systemDeclarations.declaration(identifier)
        {
            var tags: [UTTagClass: [String]] = [:]
            if !declaration.filenameExtensions.isEmpty { tags[.filenameExtension] = declaration.filenameExtensions }
            if !declaration.mimeTypes.isEmpty { tags[.mimeType] = declaration.mimeTypes }
            info = UTTypeInfo(
                identifier: identifier, directSupertypeIdentifiers: declaration.conformsTo,
                allSupertypeIdentifiers: supertypeClosure(of: declaration.conformsTo, in: state),
                tags: tags, localizedDescription: declaration.description, isDeclared: true, isDynamic: false,
                referenceURL: declaration.referenceURL, version: declaration.version)
        } else if let dynamic = DynamicTypeIdentifier.decode(identifier) {
            info = UTTypeInfo(
                identifier: identifier, directSupertypeIdentifiers: dynamic.conformsTo,
                allSupertypeIdentifiers: supertypeClosure(of: dynamic.conformsTo, in: state),
                tags: dynamic.tags, localizedDescription: "dynamic type", isDeclared: false, isDynamic: true)
        } else {
            return nil
        }
        state.resolved[identifier] = info
        return info
    }

    private func supertypeClosure(of direct: [String], in state: State) -> Set<String> {
        var closure = Set<String>()
        var pending = direct
        while let next = pending.popLast() {
            guard closure.insert(next).inserted else { continue }
            let declaration = state.appDeclarations.declaration(next) ?? systemDeclarations.declaration(next)
            pending.append(contentsOf: declaration?.conformsTo ?? DynamicTypeIdentifier.decode(next)?.conformsTo ?? [])
        }
        return closure
    }
}

/// Declarations indexed by identifier and by lower-cased tag, in declaration order.
struct DeclarationIndex: Sendable {
    private var byIdentifier: [String: UTTypeDeclaration] = [:]
    private var byExtension: [String: [String]] = [:]
    private var byMimeType: [String: [String]] = [:]

    init(_ declarations: [UTTypeDeclaration] = []) {
        for declaration in declarations { insert(declaration) }
    }

    mutating func insert(_ declaration: UTTypeDeclaration) {
        let identifier = declaration.identifier
        if let old = byIdentifier[identifier] {
            for tag in old.filenameExtensions { byExtension[tag.lowercased()]?.removeAll { $0 == identifier } }
            for tag in old.mimeTypes { byMimeType[tag.lowercased()]?.removeAll { $0 == identifier } }
        }
        byIdentifier[identifier] = declaration
        for tag in declaration.filenameExtensions { byExtension[tag.lowercased(), default: []].append(identifier) }
        for tag in declaration.mimeTypes { byMimeType[tag.lowercased(), default: []].append(identifier) }
    }

    func declaration(_ identifier: String) -> UTTypeDeclaration? { byIdentifier[identifier] }

    var filenameExtensions: [String] { Array(byExtension.keys) }

    func identifiers(tag: String, tagClass: UTTagClass) -> [String] {
        switch tagClass {
        case .filenameExtension: byExtension[tag] ?? []
        case .mimeType: byMimeType[tag] ?? []
        default: []
        }
    }
}
