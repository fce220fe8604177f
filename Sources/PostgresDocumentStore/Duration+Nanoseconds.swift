extension Duration {
    /// The whole nanoseconds of the duration (what a timer or a dispatch deadline takes).
    var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}
