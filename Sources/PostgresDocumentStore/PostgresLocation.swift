import Foundation

/// `postgresql://USER@HOST[:PORT]/DB[?store=NAME]`, or `postgresql:///DB?service=NAME&store=NAME`:
/// the database and the store in it. The password comes from libpq's own places (PGPASSWORD,
/// ~/.pgpass or PGPASSFILE, a service in pg_service.conf), never from the location, which every
/// user of the machine can read (the process list, /proc/mounts, the log, the cache folder's name).
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

    /// libpq's parameters that carry a secret.
    static let secretParameters: Set<String> = ["password", "sslpassword"]

    static let passwordRefusal =
        "a password does not belong in the location (anyone on the machine can read it there): put it in PGPASSWORD, ~/.pgpass, PGPASSFILE or a service in pg_service.conf"

    /// `text` with the password of its user part and the values of secret parameters replaced by
    /// `***`, for messages about a location that holds one.
    static func redacted(_ text: String) -> String {
        var result = text
        // user:password@ in the authority.
        if let scheme = result.range(of: "://") {
            let authorityEnd = result[scheme.upperBound...].firstIndex { "/?#".contains($0) } ?? result.endIndex
            if let at = result[scheme.upperBound..<authorityEnd].lastIndex(of: "@"),
               let colon = result[scheme.upperBound..<at].firstIndex(of: ":")
            {
                result.replaceSubrange(result.index(after: colon)..<at, with: "***")
            }
        }
        // password=… and sslpassword=… in the query, whatever their case.
        guard let query = result.firstIndex(of: "?") else { return result }
        let parameters = result[result.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false).map { parameter -> String in
            let name = parameter.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            let decoded = name.removingPercentEncoding ?? name
            return secretParameters.contains(decoded.lowercased()) ? name + "=***" : String(parameter)
        }
        return String(result[...query]) + parameters.joined(separator: "&")
    }

    public static func isPostgresLocation(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    public init(_ text: String) throws {
        guard Self.isPostgresLocation(text), var components = URLComponents(string: text) else {
            throw PostgresStoreError.badLocation(Self.redacted(text), "expected postgresql://USER@HOST[:PORT]/DB[?store=NAME]")
        }
        var items = components.queryItems ?? []
        if components.password != nil || items.contains(where: { Self.secretParameters.contains($0.name.lowercased()) }) {
            throw PostgresStoreError.badLocation(Self.redacted(text), Self.passwordRefusal)
        }
        let service = items.contains { $0.name == "service" }
        guard components.host?.isEmpty == false || items.contains(where: { $0.name == "host" }) || service else {
            throw PostgresStoreError.badLocation(text, "no host")
        }
        guard components.path.count > 1 || service else { throw PostgresStoreError.badLocation(text, "no database name") }
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
