/// How far a mount has read the change log (`docfs_changes`): the snapshot it last read it in.
///
/// Changes commit in any order: no change waits for another's commit (a store-wide counter made
/// every change to a store wait for the one before, fsync after fsync). So a row's number says
/// nothing of what committed before it, and reading "past number N" could miss a change that took a
/// lower number and committed later. A snapshot says it exactly: every transaction below its xmax
/// and not in progress in it had ended, so their rows were all in it. The rows a later snapshot
/// holds that this one did not are those of the transactions at or past its xmax, or in progress
/// in it: the next read asks for those, and sees each row once.
struct ChangeCursor: Equatable, Sendable {
    /// The snapshot's xmax: no transaction at or past it had ended.
    var xmax: Int64 = 0
    /// The transactions in progress in the snapshot (all below `xmax`).
    var inProgress: [Int64] = []

    /// The oldest transaction whose rows the next read may need: rows below it are not asked for,
    /// so a log pruned below it lost nothing this mount needs.
    var oldestNeeded: Int64 { inProgress.min() ?? xmax }

    /// The snapshot in `pg_snapshot`'s text form, `xmin:xmax:xip,xip,…`; nil for anything else.
    init?(snapshot text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let xmax = Int64(parts[1]) else { return nil }
        var inProgress: [Int64] = []
        for id in parts[2].split(separator: ",") {
            guard let id = Int64(id) else { return nil }
            inProgress.append(id)
        }
        self.init(xmax: xmax, inProgress: inProgress)
    }

    init(xmax: Int64 = 0, inProgress: [Int64] = []) {
        self.xmax = xmax
        self.inProgress = inProgress
    }

    /// `inProgress` as a PostgreSQL array literal, for `= ANY($n::text::xid8[])`.
    var inProgressLiteral: String { "{" + inProgress.map(String.init).joined(separator: ",") + "}" }
}
