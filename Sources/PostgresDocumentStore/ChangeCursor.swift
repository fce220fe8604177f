/// How far a mount has read the change log (`docfs_changes`).
///
/// Changes commit in any order: no change waits for another's commit (a store-wide counter made
/// every change to a store wait for the one before, fsync after fsync). So a row's number says
/// nothing of what committed before it, and reading "past number N" could miss a change that took a
/// lower number and committed later. Transaction ids say it: every transaction older than a
/// snapshot's xmin had ended when the snapshot was taken, so each of their rows is in it. A read
/// takes every row from the last horizon on, skips the rows it applied already, and moves the
/// horizon to its own snapshot's xmin. Applying a folder's change twice is harmless (the folder is
/// compared with the database), so the set only saves work.
struct ChangeCursor: Equatable, Sendable {
    /// The xmin of the snapshot last read: the log's rows from transactions below it were all read.
    var horizon: Int64 = 0
    /// The numbers of rows read from transactions at or past `horizon`, which the next read sees again.
    var applied: Set<Int64> = []

    /// The cursor after a read of the rows from `horizon` on in a snapshot whose xmin is `next`:
    /// `rows` gives each row's number and transaction id, and whether it is new to this cursor.
    func advanced(to next: Int64, rows: [(number: Int64, transaction: Int64)]) -> (cursor: ChangeCursor, new: Set<Int64>) {
        var cursor = ChangeCursor(horizon: max(horizon, next))
        var new = Set<Int64>()
        for row in rows {
            if !applied.contains(row.number) { new.insert(row.number) }
            if row.transaction >= cursor.horizon { cursor.applied.insert(row.number) }
        }
        return (cursor, new)
    }
}
