import Foundation

public enum PostgresStoreError: Error, CustomStringConvertible, Sendable {
    case badLocation(String, String)
    case schemaTooNew(found: Int, known: Int)
    case conflict(path: String, detail: String)
    case missingContent(path: String)
    case unavailable(String)
    case noSuchStore(String)
    case mirrorInUse(String)

    public var description: String {
        switch self {
        case .badLocation(let location, let reason): "\(location): \(reason)"
        case .schemaTooNew(let found, let known):
            "the database's DocFS schema is version \(found), newer than this DocFS knows (\(known)): upgrade DocFS"
        case .conflict(let path, let detail):
            "conflict: \(path) \(detail); this save is refused so as not to overwrite that version"
        case .missingContent(let path): "the database lacks content chunks of \(path)"
        case .unavailable(let reason): "the database is not reachable: \(reason)"
        case .noSuchStore(let name): "the database holds no DocFS store named \(name)"
        case .mirrorInUse(let directory):
            "the mirror \(directory) is in use by another mount (give each mount its own --cache-directory)"
        }
    }
}
