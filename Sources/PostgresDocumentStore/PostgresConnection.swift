import CPostgreSQL
import Foundation
import Glibc

/// A failure reported by PostgreSQL or by libpq, with the SQLSTATE when the server sent one.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public let sqlState: String?

    /// The connection is gone or unusable (the server stopped, the network dropped): the operation
    /// may be retried once the connection is back.
    public var isConnectionFailure: Bool {
        guard let sqlState else { return true }
        // 08: connection exception; 57P: operator intervention (shutdown, crash, cannot connect now).
        return sqlState.hasPrefix("08") || sqlState.hasPrefix("57P")
    }

    public var isUniqueViolation: Bool { sqlState == "23505" }

    public var description: String {
        let text = message.trimmingCharacters(in: .whitespacesAndNewlines)
        return sqlState.map { "\(text) (SQLSTATE \($0))" } ?? text
    }
}

/// A parameter of a statement. Bytes travel in binary, the rest as text the server parses by
/// the column it meets.
public enum PostgresValue: Sendable {
    case text(String)
    case bytes([UInt8])
    case integer(Int64)
    case null
}

/// The rows a statement returned, in binary format.
public struct PostgresRows: ~Copyable {
    fileprivate let result: OpaquePointer

    deinit { PQclear(result) }

    public var count: Int { Int(PQntuples(result)) }

    public func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(result, Int32(row), Int32(column)) == 1 }

    public func bytes(_ row: Int, _ column: Int) -> [UInt8] {
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        guard length > 0, let value = PQgetvalue(result, Int32(row), Int32(column)) else { return [] }
        return value.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }

    /// Copies the column's bytes into `destination` (for chunk data, without an intermediate array).
    public func withBytes<T>(_ row: Int, _ column: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        guard length > 0, let value = PQgetvalue(result, Int32(row), Int32(column)) else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: value, count: length))
    }

    /// An integer column (int2, int4 or int8), big-endian in binary format; nil when NULL.
    public func integer(_ row: Int, _ column: Int) -> Int64? {
        isNull(row, column) ? nil : Self.integer(fromBinary: bytes(row, column))
    }

    /// A big-endian two's complement integer (libpq's binary form of int2, int4 and int8); of a
    /// longer value, the last 8 bytes.
    static func integer(fromBinary raw: [UInt8]) -> Int64 {
        var value: Int64 = raw.first.map { $0 & 0x80 != 0 ? -1 : 0 } ?? 0
        for byte in raw { value = (value << 8) | Int64(byte) }
        return value
    }

    public func text(_ row: Int, _ column: Int) -> String? {
        isNull(row, column) ? nil : String(decoding: bytes(row, column), as: UTF8.self)
    }
}

/// One libpq connection, used by one thread at a time (the pool hands it out).
public final class PostgresConnection: @unchecked Sendable {
    private var connection: OpaquePointer?
    let parameters: String

    /// Connects with a libpq connection string or URI.
    public init(parameters: String) throws {
        self.parameters = parameters
        connection = PQconnectdb(parameters)
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = connection.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(connection)
            connection = nil
            throw PostgresError(message: message, sqlState: nil)
        }
        // The server's notices ("relation already exists, skipping") are not for the user's terminal.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }

    deinit { PQfinish(connection) }

    public var isHealthy: Bool { PQstatus(connection) == CONNECTION_OK }

    /// The socket to poll for notifications.
    var socket: Int32 { PQsocket(connection) }

    /// Runs one statement with `$1`… parameters; returns its rows (binary format).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws -> PostgresRows {
        var buffers: [[UInt8]] = []
        var formats: [Int32] = []
        var isNull: [Bool] = []
        for parameter in parameters {
            switch parameter {
            case .text(let text):
                buffers.append(Array(text.utf8) + [0]); formats.append(0); isNull.append(false)
            case .integer(let value):
                buffers.append(Array(String(value).utf8) + [0]); formats.append(0); isNull.append(false)
            case .bytes(let bytes):
                buffers.append(bytes); formats.append(1); isNull.append(false)
            case .null:
                buffers.append([]); formats.append(0); isNull.append(true)
            }
        }
        let lengths = buffers.map { Int32($0.count) }
        let result: OpaquePointer? = withPointers(to: buffers, isNull: isNull) { values in
            PQexecParams(connection, sql, Int32(parameters.count), nil, values, lengths, formats, 1)
        }
        guard let result else { throw PostgresError(message: String(cString: PQerrorMessage(connection)), sqlState: nil) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = PQresultErrorMessage(result).map { String(cString: $0) } ?? "statement failed"
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            PQclear(result)
            throw PostgresError(message: message.isEmpty ? String(cString: PQerrorMessage(connection)) : message, sqlState: state)
        }
        return PostgresRows(result: result)
    }

    /// Runs several statements without parameters (a migration), in the simple query protocol.
    public func executeScript(_ sql: String) throws {
        guard let result = PQexec(connection, sql) else { throw PostgresError(message: String(cString: PQerrorMessage(connection)), sqlState: nil) }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            throw PostgresError(message: String(cString: PQresultErrorMessage(result)), sqlState: state)
        }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    public func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try execute("BEGIN")
        let value: T
        do {
            value = try body(self)
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
        try execute("COMMIT")
        return value
    }

    /// Reads what arrived on the socket and returns the notifications' payloads.
    func notifications() throws -> [String] {
        guard PQconsumeInput(connection) == 1 else { throw PostgresError(message: String(cString: PQerrorMessage(connection)), sqlState: nil) }
        var payloads: [String] = []
        while let notice = PQnotifies(connection) {
            payloads.append(String(cString: notice.pointee.extra))
            PQfreemem(notice)
        }
        return payloads
    }

    private func withPointers<R>(to buffers: [[UInt8]], isNull: [Bool], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        var pointers: [UnsafePointer<CChar>?] = []
        func next(_ index: Int) -> R {
            if index == buffers.count { return body(pointers) }
            if isNull[index] {
                pointers.append(nil)
                return next(index + 1)
            }
            return buffers[index].withUnsafeBufferPointer { buffer in
                // A zero-length bytea still needs a non-null pointer (null means SQL NULL).
                let base = buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }
                pointers.append(base ?? UnsafePointer(bitPattern: 1))
                return next(index + 1)
            }
        }
        return next(0)
    }
}
