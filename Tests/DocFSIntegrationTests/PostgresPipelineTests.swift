import Foundation
import PostgresDocumentStore
import Testing

/// Statements held for the next round trip (`PostgresConnection.executeLater`, libpq's pipeline
/// mode): they run in order with the statement that needs an answer, a failure among them is that
/// statement's failure, and it never leaves a transaction open or a connection unusable. A change
/// on a PostgreSQL store holds its fixed statements (the change record, chunk inserts, a lock) this
/// way, so a small create makes 6 round trips where it made 12.
@Suite(.serialized, .timeLimit(.minutes(5)))
final class PostgresPipelineTests {
    let cluster: PostgresCluster
    let connection: PostgresConnection

    init() throws {
        cluster = try PostgresCluster()
        connection = try PostgresConnection(parameters: "host=127.0.0.1 port=\(cluster.port) user=docfs dbname=docfs")
        try connection.executeScript("CREATE TABLE pipelined (id int PRIMARY KEY, note text)")
    }

    private func notes() throws -> [String] {
        let rows = try connection.execute("SELECT note FROM pipelined ORDER BY id")
        return (0..<rows.count).compactMap { rows.text($0, 0) }
    }

    @Test func heldStatementsRunInOrderBeforeTheStatementThatSendsThem() throws {
        connection.executeLater("INSERT INTO pipelined VALUES (1, 'first')", prepared: true)
        connection.executeLater("UPDATE pipelined SET note = note || ', then updated' WHERE id = $1", [.integer(1)], prepared: true)
        let rows = try connection.execute("SELECT note FROM pipelined WHERE id = $1", [.integer(1)], prepared: true)
        #expect(rows.count == 1 && rows.text(0, 0) == "first, then updated")
        // The same statements again, now prepared: by their names, in one round trip.
        connection.executeLater("INSERT INTO pipelined VALUES (2, 'first')", prepared: true)
        connection.executeLater("UPDATE pipelined SET note = note || ', then updated' WHERE id = $1", [.integer(2)], prepared: true)
        #expect(try connection.execute("SELECT note FROM pipelined WHERE id = $1", [.integer(2)], prepared: true).text(0, 0) == "first, then updated")
    }

    @Test func aHeldStatementThatFailsIsTheCommitsAnswerAndNothingOfTheTransactionStays() throws {
        try connection.execute("INSERT INTO pipelined VALUES (1, 'before')")
        try connection.execute("BEGIN")
        try connection.execute("INSERT INTO pipelined VALUES (2, 'in the transaction')")
        connection.executeLater("INSERT INTO pipelined VALUES (3, 'held, runs')", prepared: true)
        connection.executeLater("INSERT INTO pipelined VALUES (1, 'held, a duplicate')", prepared: true)
        connection.executeLater("INSERT INTO pipelined VALUES (4, 'held, never runs')", prepared: true)
        #expect {
            try connection.commit()
        } throws: { error in
            (error as? PostgresError)?.isUniqueViolation == true
        }
        // Rolled back, and the connection is idle and usable: nothing of 2, 3 or 4 committed.
        #expect(try notes() == ["before"])
        try connection.transaction { db in
            try db.execute("INSERT INTO pipelined VALUES (5, 'next transaction')")
        }
        #expect(try notes() == ["before", "next transaction"])
    }

    @Test func aHeldStatementThatFailsFailsTheStatementAfterItWhichDoesNotRun() throws {
        try connection.execute("INSERT INTO pipelined VALUES (1, 'before')")
        try connection.execute("BEGIN")
        connection.executeLater("INSERT INTO pipelined VALUES (1, 'a duplicate')")
        #expect {
            try connection.execute("INSERT INTO pipelined VALUES (2, 'after the failure') RETURNING id")
        } throws: { error in
            (error as? PostgresError)?.isUniqueViolation == true
        }
        connection.rollback()
        #expect(try notes() == ["before"])
    }

    @Test func aStatementPreparedInAPipelineThatFailedBeforeItIsPreparedAgain() throws {
        try connection.execute("INSERT INTO pipelined VALUES (1, 'before')")
        let insert = "INSERT INTO pipelined VALUES ($1, 'prepared late')"
        try connection.execute("BEGIN")
        connection.executeLater("INSERT INTO pipelined VALUES (1, 'a duplicate')")
        connection.executeLater(insert, [.integer(2)], prepared: true)
        #expect(throws: PostgresError.self) { try connection.execute("SELECT 1") }
        connection.rollback()
        // Its PREPARE was skipped with the rest: used now, it is prepared again, not assumed.
        try connection.execute(insert, [.integer(3)], prepared: true)
        #expect(try notes() == ["before", "prepared late"])
    }

    @Test func rollingBackDropsHeldStatementsUnsent() throws {
        try connection.execute("BEGIN")
        try connection.execute("INSERT INTO pipelined VALUES (1, 'rolled back')")
        connection.executeLater("INSERT INTO pipelined VALUES (2, 'held')")
        connection.rollback()
        #expect(try notes().isEmpty)
        try connection.execute("INSERT INTO pipelined VALUES (3, 'autocommitted')")
        #expect(try notes() == ["autocommitted"])
    }
}
