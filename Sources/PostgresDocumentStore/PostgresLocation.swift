import CPostgreSQL
import Foundation

/// Where a PostgreSQL store is: any connection string libpq accepts, with `store=NAME` beside its
/// parameters (`default` when absent). Either a URI,
/// `postgresql://USER@HOST[:PORT][,HOST[:PORT]…]/DB[?PARAMETER=VALUE&…&store=NAME]` (several
/// hosts for a highly available cluster, IPv6 addresses in brackets), or keyword/value pairs,
/// `host=H1,H2 port=5432,5432 dbname=DB target_session_attrs=read-write store=NAME`, or a service
/// in pg_service.conf. The password comes from libpq's own places (PGPASSWORD, ~/.pgpass or
/// PGPASSFILE, a service), never from the location, which every user of the machine can read (the
/// process list, /proc/mounts, the log, the cache folder's name).
public struct PostgresLocation: Sendable, CustomStringConvertible {
    /// What libpq connects with: the location without `store`, with DocFS's defaults added.
    public let connectionParameters: String
    public let storeName: String
    /// What names the store whatever the spelling (URI or keyword/value pairs, parameters in any
    /// order): libpq's reading of its hosts, ports, database, user and service, and the store.
    public let identity: String
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

    static let expectedForms =
        "expected a libpq connection string with store=NAME beside its parameters: postgresql://USER@HOST[:PORT][,HOST[:PORT]…]/DB[?…&store=NAME], or keyword=value pairs such as \"host=H1,H2 dbname=DB store=NAME\""

    /// A URI, or text with `=` in it that names nothing on disk (keyword/value pairs, malformed
    /// ones included: those are refused as locations, saying why, never opened as a folder).
    public static func isPostgresLocation(_ text: String) -> Bool {
        if isURI(text) { return true }
        return text.utf8.first != UInt8(ascii: "/") && !text.hasPrefix(".") && text.contains("=") && access(text, F_OK) != 0
    }

    public init(_ text: String) throws {
        // Refused before libpq reads it, whatever the keyword's case (libpq rejects `PassWord` as
        // unknown, which would not say why).
        if Self.namesSecret(text) { throw PostgresStoreError.badLocation(Self.redacted(text), Self.passwordRefusal) }
        let (parameters, store): (String, String?)
        if Self.isURI(text) {
            (parameters, store) = Self.removingStore(fromURI: text)
        } else {
            guard var pairs = try? KeywordPairs(text), !pairs.items.isEmpty else {
                throw PostgresStoreError.badLocation(Self.redacted(text), Self.expectedForms)
            }
            store = pairs.items.last { $0.keyword == "store" }?.value
            pairs.items.removeAll { $0.keyword == "store" }
            parameters = pairs.text
        }
        let options = try Self.parsedByLibpq(parameters, as: text)
        if options.keys.contains(where: Self.secretParameters.contains) {
            throw PostgresStoreError.badLocation(Self.redacted(text), Self.passwordRefusal)
        }
        let service = options["service"] != nil
        guard options["host"] != nil || options["hostaddr"] != nil || service else {
            throw PostgresStoreError.badLocation(Self.redacted(text), "no host")
        }
        guard options["dbname"] != nil || service else { throw PostgresStoreError.badLocation(Self.redacted(text), "no database name") }
        let storeName = store ?? "default"
        guard !storeName.isEmpty else { throw PostgresStoreError.badLocation(Self.redacted(text), "the store name is empty") }
        let added = Self.defaultParameters.filter { options[$0.0] == nil }
        if Self.isURI(text) {
            let query = added.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
            connectionParameters = query.isEmpty ? parameters : parameters + (Self.queryStart(parameters) != nil ? "&" : "?") + query
        } else {
            connectionParameters = ([parameters] + added.map { KeywordPairs.pair($0.0, $0.1) }).joined(separator: " ")
        }
        self.storeName = storeName
        description = text
        identity = ["host", "hostaddr", "port", "dbname", "user", "service"]
            .map { "\($0)=\(options[$0] ?? ($0 == "port" ? "5432" : ""))" }.joined(separator: "\n") + "\nstore=" + storeName
    }

    /// Whether a parameter's name (as written: percent-encoded, in any case) is one that carries a
    /// secret.
    private static func isSecret<S: StringProtocol>(_ name: S) -> Bool {
        let name = String(name)
        return secretParameters.contains((name.removingPercentEncoding ?? name).lowercased())
    }

    /// Whether `text` holds a password: in a URI's user part, or as a secret parameter. Pairs that
    /// do not parse count as holding one if they mention one at all.
    private static func namesSecret(_ text: String) -> Bool {
        guard isURI(text) else {
            guard let pairs = try? KeywordPairs(text) else { return text.lowercased().contains("password") }
            return pairs.items.contains { isSecret($0.keyword) }
        }
        if passwordRange(text) != nil { return true }
        guard let query = queryStart(text) else { return false }
        return text[text.index(after: query)...].split(separator: "&").contains { isSecret($0.prefix { $0 != "=" }) }
    }

    /// The user part of a URI as libpq reads it: up to the first `@` before the first `/` after
    /// the scheme (`?` and `#` do not end it).
    private static func userPart(_ text: String) -> Range<String.Index>? {
        guard let scheme = text.range(of: "://") else { return nil }
        let rest = text[scheme.upperBound...]
        let hostEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        guard let at = rest[..<hostEnd].firstIndex(of: "@") else { return nil }
        return scheme.upperBound..<at
    }

    /// Where a URI's password is (after the first `:` of its user part), if it has one.
    private static func passwordRange(_ text: String) -> Range<String.Index>? {
        guard let user = userPart(text), let colon = text[user].firstIndex(of: ":") else { return nil }
        return text.index(after: colon)..<user.upperBound
    }

    /// The `?` that starts a URI's parameters: the first one after its user part.
    static func queryStart(_ text: String) -> String.Index? {
        let from = userPart(text).map { text.index(after: $0.upperBound) } ?? text.startIndex
        return text[from...].firstIndex(of: "?")
    }

    static func isURI(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    /// The URI without its `store` parameter, and that parameter's value.
    private static func removingStore(fromURI text: String) -> (String, String?) {
        guard let mark = queryStart(text) else { return (text, nil) }
        var store: String?
        var kept: [Substring] = []
        for parameter in text[text.index(after: mark)...].split(separator: "&") {
            let parts = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard String(parts[0]).removingPercentEncoding == "store" else {
                kept.append(parameter)
                continue
            }
            let value = parts.count > 1 ? String(parts[1]) : ""
            store = value.removingPercentEncoding ?? value
        }
        let base = String(text[..<mark])
        return (kept.isEmpty ? base : base + "?" + kept.joined(separator: "&"), store)
    }

    /// The parameters libpq reads from `parameters` (it parses every form, as it will connect).
    private static func parsedByLibpq(_ parameters: String, as text: String) throws -> [String: String] {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(parameters, &message) else {
            let reason = message.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "cannot be read"
            if let message { PQfreemem(message) }
            throw PostgresStoreError.badLocation(redacted(text), "\(reason); \(expectedForms)")
        }
        defer { PQconninfoFree(options) }
        var result: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { result[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return result
    }

    /// `text` with the password of a URI's user part and the values of secret parameters replaced
    /// by `***`, for messages about a location that holds one.
    public static func redacted(_ text: String) -> String {
        guard isURI(text) else {
            guard let pairs = try? KeywordPairs(text) else {
                return text.lowercased().contains("password") ? "(a location naming a password)" : text
            }
            return pairs.items.map { isSecret($0.keyword) ? "\($0.keyword)=***" : KeywordPairs.pair($0.keyword, $0.value) }
                .joined(separator: " ")
        }
        var result = text
        // user:password@ before the host, as libpq reads it.
        if let password = passwordRange(result) { result.replaceSubrange(password, with: "***") }
        // password=… and sslpassword=… in the query, whatever their case.
        guard let query = queryStart(result) else { return result }
        let parameters = result[result.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false).map { parameter -> String in
            let name = parameter.prefix { $0 != "=" }
            return isSecret(name) ? name + "=***" : String(parameter)
        }
        return String(result[...query]) + parameters.joined(separator: "&")
    }
}
