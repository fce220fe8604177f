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

    /// The transaction was rolled back for a reason that passes: the connection failed, the server
    /// is a standby (read-only, a failover under way), or a lock, a deadlock, a serialization
    /// conflict or a statement timeout ended it. The same change may be tried again.
    public var isTransient: Bool {
        isConnectionFailure || ["25006", "40001", "40P01", "55P03", "57014"].contains(sqlState ?? "")
    }

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

/// A transaction's BEGIN or first statement, sent with a later statement (`beginLater`), failed or
/// went unanswered: nothing of the transaction ran.
struct TransactionNotBegun: Error {
    let cause: PostgresError
}

/// One libpq connection, used by one thread at a time (the pool hands it out).
///
/// Nothing waits on the database without a limit: connecting gives up after `connect_timeout`
/// (see `PostgresLocation.defaultParameters`), the server cancels a statement after 15 s and a lock
/// wait after 5 s, and a statement whose answer does not come within `answerTimeout` (a server
/// stopped, a network gone silent: what no server-side limit can see) abandons the connection
/// with a connection failure.
public final class PostgresConnection: @unchecked Sendable {
    private var connection: OpaquePointer?
    let parameters: String
    /// How long a statement may go unanswered before the connection is given up.
    var answerTimeout: Duration? = .seconds(20)

    /// Settings each session starts with: the server's own limits on a statement and on a lock wait
    /// (lock waits fail fast and the change is tried again), and a transaction left open by a client
    /// that went silent is ended rather than holding its locks.
    static let sessionLimits = "SET statement_timeout = '15s'; SET lock_timeout = '5s'; SET idle_in_transaction_session_timeout = '60s'"

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
        // Sent without blocking, so a server that stopped reading cannot hold a send forever.
        PQsetnonblocking(connection, 1)
        try executeScript(Self.sessionLimits)
    }

    deinit { PQfinish(connection) }

    public var isHealthy: Bool { connection != nil && PQstatus(connection) == CONNECTION_OK }

    /// The socket to poll for notifications.
    var socket: Int32 { PQsocket(connection) }

    /// Runs `body` with `answerTimeout` set to `timeout` (for a statement known to take long, such as
    /// reading a whole large store).
    func withAnswerTimeout<T>(_ timeout: Duration?, _ body: () throws -> T) rethrows -> T {
        let saved = answerTimeout
        answerTimeout = timeout
        defer { answerTimeout = saved }
        return try body()
    }

    /// The statements prepared on this connection (`execute(prepared:)`), by their text.
    private var preparedNames: [String: String] = [:]

    /// Runs one statement with `$1`… parameters; returns its rows (binary format). `prepared`: the
    /// statement is parsed and planned once per connection (on its first use), not at every call;
    /// for the fixed statements of every save and create, where parsing and planning took about a
    /// third of the server's time (perf, 1,000 creates). Never for text built per call.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = [], prepared: Bool = false) throws -> PostgresRows {
        if let failure = openingFailure { throw TransactionNotBegun(cause: failure) }
        guard held.isEmpty else {
            guard let result = try runPipeline(held + [HeldStatement(sql: sql, parameters: parameters, prepared: prepared)]) else {
                throw PostgresError(message: "no result for \(sql)", sqlState: nil)
            }
            return PostgresRows(result: result)
        }
        var name: String?
        if prepared {
            if let known = preparedNames[sql] {
                name = known
            } else {
                // A statement prepared through the protocol outlives a transaction rolled back.
                let made = "docfs_\(preparedNames.count)"
                guard PQsendPrepare(connection, made, sql, Int32(parameters.count), nil) == 1 else { throw lastFailure() }
                PQclear(try awaitResult())
                preparedNames[sql] = made
                name = made
            }
        }
        guard send(sql, parameters, preparedAs: name) else { throw lastFailure() }
        return PostgresRows(result: try awaitResult())
    }

    /// Sends one statement (by its prepared name, if it has one), without waiting; false when libpq
    /// could not queue it.
    private func send(_ sql: String, _ parameters: [PostgresValue], preparedAs name: String?) -> Bool {
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
        return withPointers(to: buffers, isNull: isNull) { values in
            if let name { return PQsendQueryPrepared(connection, name, Int32(parameters.count), values, lengths, formats, 1) }
            return PQsendQueryParams(connection, sql, Int32(parameters.count), nil, values, lengths, formats, 1)
        } == 1
    }

    /// Runs several statements without parameters (a migration), in the simple query protocol.
    public func executeScript(_ sql: String) throws {
        guard PQsendQuery(connection, sql) == 1 else { throw lastFailure() }
        PQclear(try awaitResult())
    }

    /// Sends `sql` and drops the connection without reading the answer: the fault of an answer lost
    /// on its way (for tests, through `TestHook.commitAnswerLost`).
    func sendUnanswered(_ sql: String) throws {
        if held.isEmpty {
            guard PQsendQuery(connection, sql) == 1 else { throw lastFailure() }
        } else {
            // With the statements held for it, as `execute` would send them.
            guard PQenterPipelineMode(connection) == 1 else { throw lastFailure() }
            _ = try sendPipeline(held + [HeldStatement(sql: sql, parameters: [], prepared: false)])
            held.removeAll()
        }
        while PQflush(connection) == 1 { _ = try awaitSocket(Int16(POLLOUT), until: .now + .seconds(5)) }
        PQfinish(connection)
        connection = nil
        throw PostgresError(message: "the connection was dropped before the answer came (test hook)", sqlState: nil)
    }

    /// Sends what libpq still holds and waits, within `answerTimeout`, for the statement's results;
    /// returns the first failure, or else the last result. A statement unanswered in time gives up
    /// the connection: what it did is not known, as when the connection drops.
    private func awaitResult() throws -> OpaquePointer {
        let deadline = answerTimeout.map { ContinuousClock.now + $0 }
        try flushOutput(until: deadline)
        var kept: OpaquePointer?
        while true {
            do {
                try awaitAnswer(until: deadline)
            } catch {
                PQclear(kept)
                throw error
            }
            guard let result = PQgetResult(connection) else { break }
            if let previous = kept, Self.failed(previous) {
                PQclear(result)
            } else {
                PQclear(kept)
                kept = result
            }
        }
        guard let kept else { throw lastFailure() }
        guard !Self.failed(kept) else {
            let error = Self.error(of: kept, on: connection)
            PQclear(kept)
            throw error
        }
        return kept
    }

    /// The error a failed result reports.
    private static func error(of result: OpaquePointer, on connection: OpaquePointer?) -> PostgresError {
        let message = PQresultErrorMessage(result).map { String(cString: $0) } ?? "statement failed"
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        return PostgresError(message: message.isEmpty ? connection.map { String(cString: PQerrorMessage($0)) } ?? "statement failed" : message, sqlState: state)
    }

    /// Sends everything libpq still holds, within `deadline`.
    private func flushOutput(until deadline: ContinuousClock.Instant?) throws {
        while true {
            let flushed = PQflush(connection)
            if flushed == 0 { return }
            guard flushed > 0 else { throw lastFailure() }
            // libpq may need to read before it can send more (the server answering already).
            if try awaitSocket(Int16(POLLIN | POLLOUT), until: deadline) & Int16(POLLIN) != 0, PQconsumeInput(connection) != 1 {
                throw lastFailure()
            }
        }
    }

    /// Reads until the next result (or the end of a statement's results) can be taken without
    /// waiting, within `deadline`.
    private func awaitAnswer(until deadline: ContinuousClock.Instant?) throws {
        while PQisBusy(connection) == 1 {
            _ = try awaitSocket(Int16(POLLIN), until: deadline)
            guard PQconsumeInput(connection) == 1 else { throw lastFailure() }
        }
    }

    private static func failed(_ result: OpaquePointer) -> Bool {
        let status = PQresultStatus(result)
        return status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK
    }

    /// Waits for the socket to be ready for `events`; past `deadline`, closes the connection and
    /// throws a connection failure.
    private func awaitSocket(_ events: Int16, until deadline: ContinuousClock.Instant?) throws -> Int16 {
        while true {
            var timeout: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { break }
                let (seconds, attoseconds) = left.components
                timeout = Int32(min(seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1, Int64(Int32.max)))
            }
            var descriptor = pollfd(fd: PQsocket(connection), events: events, revents: 0)
            let ready = poll(&descriptor, 1, timeout)
            if ready > 0 { return descriptor.revents }
            if ready < 0 && errno != EINTR {
                // The statement's state is unknown: the connection is not used again.
                let failure = PostgresError(message: "poll: \(String(cString: strerror(errno)))", sqlState: nil)
                PQfinish(connection)
                connection = nil
                throw failure
            }
        }
        PQfinish(connection)
        connection = nil
        throw PostgresError(message: "the database did not answer within \(answerTimeout ?? .zero)", sqlState: nil)
    }

    private func lastFailure() -> PostgresError {
        PostgresError(message: connection.map { String(cString: PQerrorMessage($0)) } ?? "the connection was given up", sqlState: nil)
    }

    /// Notifications for the other mounts, sent once this transaction has committed (see
    /// `CommitNotifier`), and never for one rolled back.
    private var notificationsAfterCommit: Set<CommitNotifier.Notification> = []
    /// Given the notifications of each transaction that committed (the pool's `CommitNotifier`).
    var committed: (@Sendable (Set<CommitNotifier.Notification>) -> Void)?
    /// Those of a transaction whose COMMIT went unanswered: sent by whoever finds it committed.
    private var unansweredNotifications: Set<CommitNotifier.Notification> = []

    /// The notifications of the transaction whose COMMIT went unanswered (or was never sent, the
    /// connection lost first), for `PostgresStore.change` to send if it turns out committed.
    func takeUnconfirmedNotifications() -> Set<CommitNotifier.Notification> {
        defer {
            unansweredNotifications = []
            notificationsAfterCommit = []
        }
        return unansweredNotifications.union(notificationsAfterCommit)
    }

    /// Wakes the listeners on `channel` with `payload` once this transaction commits.
    func notifyAfterCommit(channel: String, payload: String) {
        notificationsAfterCommit.insert(CommitNotifier.Notification(channel: channel, payload: payload))
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    public func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try execute("BEGIN")
        let value: T
        do {
            value = try body(self)
        } catch {
            rollback()
            throw error
        }
        try commit()
        return value
    }

    /// Sends COMMIT, with the statements held for it. A held statement that failed is the answer
    /// (COMMIT did not run): the transaction is rolled back here, as a COMMIT the server refused is.
    public func commit() throws {
        let notifications = notificationsAfterCommit
        notificationsAfterCommit = []
        do {
            try execute("COMMIT")
        } catch let error as PostgresError where !error.isConnectionFailure {
            if connection != nil, PQtransactionStatus(connection) != PQTRANS_IDLE { rollback() }
            throw error
        } catch {
            unansweredNotifications = notifications
            throw error
        }
        committed?(notifications)
    }

    /// Ends the transaction, rolling back what it did: the statements held for it are dropped
    /// unsent (a ROLLBACK in a pipeline behind a failed one would be skipped, leaving the
    /// transaction open), and if the server never saw it begin, nothing is sent. Never fails: a
    /// connection it could not reach is given up.
    public func rollback() {
        let begun = !held.contains { $0.opensTransaction }
        held.removeAll()
        notificationsAfterCommit = []
        openingFailure = nil
        guard begun, connection != nil else { return }
        if (try? execute("ROLLBACK")) == nil, connection != nil, PQtransactionStatus(connection) != PQTRANS_IDLE {
            PQfinish(connection)
            connection = nil
        }
    }

    // MARK: Statements held for the next round trip

    /// A statement sent only with the next one that needs an answer (see `executeLater`).
    private struct HeldStatement {
        let sql: String
        let parameters: [PostgresValue]
        let prepared: Bool
        /// BEGIN and the mark of a transaction (`beginLater`): a failure here means nothing of
        /// the transaction ran.
        var opensTransaction = false
        /// Given the statement's rows when they arrive (before the statement that sent it returns).
        var answer: ((borrowing PostgresRows) -> Void)?
    }

    private var held: [HeldStatement] = []

    /// The failure of a held BEGIN or mark: every later statement of the transaction fails with
    /// it, unsent, until `rollback`.
    private(set) var openingFailure: PostgresError?

    /// Whether statements are waiting for the next round trip.
    var holdsStatements: Bool { !held.isEmpty }

    /// Holds a statement whose answer no one reads: it goes with the next statement that needs an
    /// answer, or with COMMIT, in one round trip (libpq's pipeline mode), in the order given. If it
    /// fails, that next statement fails with its error (the statements between are not run), so
    /// hold only statements whose failure no caller tells apart from the transaction's failure.
    /// A change's fixed statements (its change record, a chunk insert, a lock) took a round trip
    /// each: 12 per small create on a PostgreSQL store.
    /// `answer` is given the statement's rows, if it succeeds, when they arrive: before the
    /// statement that sent it returns.
    public func executeLater(
        _ sql: String, _ parameters: [PostgresValue] = [], prepared: Bool = false, answer: ((borrowing PostgresRows) -> Void)? = nil
    ) {
        held.append(HeldStatement(sql: sql, parameters: parameters, prepared: prepared, answer: answer))
    }

    /// Holds BEGIN and `statement` (the transaction's first, with `parameters`) for the next round
    /// trip. Their failure is thrown by every later statement as `TransactionNotBegun`.
    func beginLater(with statement: String, _ parameters: [PostgresValue]) {
        held.append(HeldStatement(sql: "BEGIN", parameters: [], prepared: false, opensTransaction: true))
        held.append(HeldStatement(sql: statement, parameters: parameters, prepared: true, opensTransaction: true))
    }

    /// Sends the held statements now, if any.
    func sendHeld() throws {
        guard !held.isEmpty else { return }
        if let failure = openingFailure { throw TransactionNotBegun(cause: failure) }
        PQclear(try runPipeline(held))
    }

    /// What a pipeline sent, in order: a statement to prepare (its text and name) or a statement.
    private enum PipelineItem { case prepare(String, String), statement(Int) }

    /// Queues `statements` in pipeline mode (each prepared first where it asks to be and is not
    /// yet), then the sync point.
    private func sendPipeline(_ statements: [HeldStatement]) throws -> [PipelineItem] {
        var sent: [PipelineItem] = []
        var naming: [String: String] = [:]
        for (index, statement) in statements.enumerated() {
            var name: String?
            if statement.prepared {
                name = preparedNames[statement.sql] ?? naming[statement.sql]
                if name == nil {
                    let made = "docfs_\(preparedNames.count + naming.count)"
                    guard PQsendPrepare(connection, made, statement.sql, Int32(statement.parameters.count), nil) == 1 else { throw lastFailure() }
                    naming[statement.sql] = made
                    sent.append(.prepare(statement.sql, made))
                    name = made
                }
            }
            guard send(statement.sql, statement.parameters, preparedAs: name) else { throw lastFailure() }
            sent.append(.statement(index))
        }
        guard PQpipelineSync(connection) == 1 else { throw lastFailure() }
        return sent
    }

    /// Sends `statements` in one pipeline and returns the last one's result (nil when its `answer`
    /// took it); throws the first failure. libpq runs nothing after a failed statement until the
    /// pipeline's sync point.
    private func runPipeline(_ statements: [HeldStatement]) throws -> OpaquePointer? {
        held.removeAll()
        // Each statement gets the whole `answerTimeout`, as when sent alone.
        var deadline = answerTimeout.map { ContinuousClock.now + $0 }
        let lastOpening = statements.lastIndex { $0.opensTransaction }
        let commits = statements.last?.sql == "COMMIT"
        var openingAnswered = lastOpening == nil
        var failure: (error: PostgresError, opening: Bool)?
        var last: OpaquePointer?
        do {
            guard PQenterPipelineMode(connection) == 1 else { throw lastFailure() }
            let sent = try sendPipeline(statements)
            try flushOutput(until: deadline)
            for item in sent {
                // Each statement's results, then nil.
                while true {
                    try awaitAnswer(until: deadline)
                    guard let result = PQgetResult(connection) else { break }
                    let status = PQresultStatus(result)
                    if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK {
                        switch item {
                        case .prepare(let sql, let name): preparedNames[sql] = name
                        case .statement(let index):
                            if let answer = statements[index].answer {
                                answer(PostgresRows(result: result))
                                continue
                            }
                            if index == statements.count - 1 {
                                PQclear(last)
                                last = result
                                continue
                            }
                        }
                    } else if status != PGRES_PIPELINE_ABORTED, failure == nil {
                        let opening: Bool
                        if case .statement(let index) = item { opening = statements[index].opensTransaction } else { opening = false }
                        failure = (Self.error(of: result, on: connection), opening)
                    }
                    PQclear(result)
                }
                if case .statement(let index) = item, index == lastOpening { openingAnswered = true }
                deadline = answerTimeout.map { ContinuousClock.now + $0 }
            }
            try awaitAnswer(until: deadline)
            let sync = PQgetResult(connection)
            defer { PQclear(sync) }
            guard let sync, PQresultStatus(sync) == PGRES_PIPELINE_SYNC, PQexitPipelineMode(connection) == 1 else { throw lastFailure() }
        } catch let error as PostgresError {
            // The connection's state is not known: it is not used again.
            PQclear(last)
            let lost = PostgresError(message: error.message, sqlState: nil)
            if connection != nil {
                PQfinish(connection)
                connection = nil
            }
            // An opening whose answer never came ran nothing that can commit, unless COMMIT went
            // with it (that one is answered as an unanswered COMMIT is).
            if !openingAnswered && !commits {
                openingFailure = lost
                throw TransactionNotBegun(cause: lost)
            }
            throw lost
        }
        if let failure {
            PQclear(last)
            if failure.opening && !commits {
                openingFailure = failure.error
                throw TransactionNotBegun(cause: failure.error)
            }
            throw failure.error
        }
        return last
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
