import CFUSE

/// What the session's userdata points to: the file system, reachable from every callback
/// without global state.
final class OperationsBox: Sendable {
    let operations: any FileSystemOperations

    init(_ operations: any FileSystemOperations) { self.operations = operations }

    /// The box behind a userdata pointer. The session holds a retain for its whole life, so no
    /// retain is taken per request. libfuse passes back the pointer the session was made with; a
    /// missing one gets a file system that fails every request rather than a crash.
    static func from(_ userdata: UnsafeMutableRawPointer?) -> OperationsBox {
        guard let userdata else { return unavailable }
        return Unmanaged<OperationsBox>.fromOpaque(UnsafeRawPointer(userdata)).takeUnretainedValue()
    }

    private static let unavailable = OperationsBox(UnavailableFileSystem())

    func negotiate(_ connection: UnsafeMutablePointer<fuse_conn_info>) {
        var settings = ConnectionSettings(
            capable: connection.pointee.capable, want: connection.pointee.want,
            maxWrite: connection.pointee.max_write, maxRead: connection.pointee.max_read, maxReadahead: connection.pointee.max_readahead,
            maxBackground: connection.pointee.max_background, congestionThreshold: connection.pointee.congestion_threshold,
            timeGranularity: connection.pointee.time_gran)
        operations.initialize(connection: &settings)
        connection.pointee.want = settings.want
        connection.pointee.max_write = settings.maxWrite
        connection.pointee.max_read = settings.maxRead
        connection.pointee.max_readahead = settings.maxReadahead
        connection.pointee.max_background = settings.maxBackground
        connection.pointee.congestion_threshold = settings.congestionThreshold
        connection.pointee.time_gran = settings.timeGranularity
    }
}

/// Answers every request with the protocol's defaults (ENOSYS).
private final class UnavailableFileSystem: FileSystemOperations {}
