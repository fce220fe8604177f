import Foundation

/// `postgresql://USER@HOST[:PORT]/DB[?store=NAME]`: the database and the store in it. The password
/// comes from PGPASSWORD or ~/.pgpass (libpq reads both), never from the command line, where every
/// user of the machine could read it in the process list.
public struct PostgresLocation: Sendable, CustomStringConvertible {
    /// What libpq connects with: the URI without `store`.
    public let connectionParameters: String
    public let storeName: String
    /// The location as given, for messages and `rootURL`.
    public let description: String

    /// What the location may override. A server that vanishes without closing its connections (a
    /// network cut, a host that died) is noticed within about 20 seconds, not TCP's 15 minutes: a
    /// request waits that long at most before failing with EIO.
    static let defaultParameters = [
        ("application_name", "docfs"), ("connect_timeout", "5"), ("keepalives", "1"), ("keepalives_idle", "10"),
        ("keepalives_interval", "5"), ("keepalives_count", "2"), ("tcp_user_timeout", "20000"),
    ]

    public static func isPostgresLocation(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    public init(_ text: String) throws {
        guard Self.isPostgresLocation(text), var components = URLComponents(string: text) else {
            throw PostgresStoreError.badLocation(text, "expected postgresql://USER@HOST[:PORT]/DB[?store=NAME]")
        }
        if components.password != nil {
            throw PostgresStoreError.badLocation(text, "a password does not belong on the command line (anyone on the machine can read it there): put it in PGPASSWORD or ~/.pgpass")
        }
        guard components.host?.isEmpty == false || components.queryItems?.contains(where: { $0.name == "host" }) == true else {
            throw PostgresStoreError.badLocation(text, "no host")
        }
        guard components.path.count > 1 else { throw PostgresStoreError.badLocation(text, "no database name") }
        var items = components.queryItems ?? []
        let store = items.first { $0.name == "store" }?.value ?? "default"
        guard !store.isEmpty else { throw PostgresStoreError.badLocation(text, "the store name is empty") }
        items.removeAll { $0.name == "store" }
        for (name, value) in Self.defaultParameters where !items.contains(where: { $0.name == name }) {
            items.append(URLQueryItem(name: name, value: value))
        }
        components.queryItems = items
        guard let parameters = components.string else { throw PostgresStoreError.badLocation(text, "cannot be read as a URI") }
        connectionParameters = parameters
        storeName = store
        description = text
    }
}

public enum PostgresStoreError: Error, CustomStringConvertible, Sendable {
    case badLocation(String, String)
    case schemaTooNew(found: Int, known: Int)
    case conflict(path: String, detail: String)
    case missingContent(path: String)
    case unavailable(String)
    case noSuchStore(String)

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
        }
    }
}
