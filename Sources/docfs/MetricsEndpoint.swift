import CoreMetrics
import DocumentFS
import Foundation
import FUSE
import Glibc
import Logging
import Prometheus
import SystemSupport

/// `docfs mount --metrics ADDRESS:PORT`: Prometheus's text format at `/metrics`, over plain
/// HTTP/1.1, on a thread of its own. Off by default; on the loopback address unless another is
/// given. A scrape is answered from what the metrics hold (counters, histograms) and from gauges
/// sampled as it arrives, so nothing is measured on the requests' path but a counter's add and,
/// for the request histograms, two clock reads.
///
/// It holds no names: no label carries a path, so a scrape tells nobody what the store holds.
final class MetricsEndpoint: Sendable {
    /// Where to listen: `PORT`, `HOST:PORT` or `[IPV6]:PORT`; port 0 picks a free one (logged).
    struct Address: CustomStringConvertible {
        let host: String
        let port: UInt16

        init?(_ text: String) {
            var host = "127.0.0.1"
            var portText = Substring(text)
            if let bracket = text.firstIndex(of: "]"), text.hasPrefix("[") {
                host = String(text[text.index(after: text.startIndex)..<bracket])
                guard text[text.index(after: bracket)...].hasPrefix(":") else { return nil }
                portText = text[text.index(bracket, offsetBy: 2)...]
            } else if let colon = text.lastIndex(of: ":") {
                host = String(text[..<colon])
                portText = text[text.index(after: colon)...]
            }
            guard !host.isEmpty, let port = UInt16(portText) else { return nil }
            self.host = host
            self.port = port
        }

        var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    private let listener: Int32
    let boundAddress: String
    private let logger: Logger
    private let registry: PrometheusCollectorRegistry
    private let sample: @Sendable () -> Void

    /// Bootstraps swift-metrics with the Prometheus backend: call before anything records a
    /// metric (one made before stays the no-op one), once per process.
    static func bootstrap() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Requests take microseconds, a validation or a commit up to seconds, an outage minutes.
        let requestBuckets: [Duration] = [10, 25, 50, 100, 250, 500, 1000, 2500, 10_000, 100_000, 1_000_000].map { .microseconds($0) }
        let workBuckets: [Duration] = [100, 250, 500, 1000, 2500, 5000, 10_000, 50_000, 250_000, 1_000_000, 10_000_000].map { .microseconds($0) }
        factory.durationHistogramBuckets = [
            RequestMetrics.name: requestBuckets,
            DocumentMetrics.validationName: workBuckets,
            DocumentMetrics.commitName: workBuckets,
            "docfs_database_outage_seconds": [1, 2, 5, 10, 30, 60, 300].map { .seconds($0) },
        ]
        MetricsSystem.bootstrap(factory)
        MetricsSwitch.turnOn()
        return registry
    }

    /// Listens at `address` (failing with the reason, so the mount does not start without the
    /// metrics it was asked for) and serves scrapes until the process ends.
    init(address: Address, registry: PrometheusCollectorRegistry, logger: Logger, sample: @escaping @Sendable () -> Void) throws {
        self.registry = registry
        self.sample = sample
        self.logger = logger
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let lookup = getaddrinfo(address.host, String(address.port), &hints, &found)
        guard lookup == 0, let info = found else {
            throw CommandFailure(message: "--metrics \(address): \(String(cString: gai_strerror(lookup)))", status: ExitStatus.failure)
        }
        defer { freeaddrinfo(found) }
        let socket = Glibc.socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard socket >= 0, bind(socket, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0, listen(socket, 16) == 0 else {
            let cause = String(cString: strerror(errno))
            if socket >= 0 { close(socket) }
            throw CommandFailure(message: "cannot serve metrics at \(address): \(cause)", status: ExitStatus.failure)
        }
        listener = socket
        boundAddress = Self.localAddress(of: socket) ?? address.description
        let endpoint = self
        let thread = Thread { endpoint.serve() }
        thread.name = "docfs-metrics"
        thread.start()
        logger.info("serving metrics at http://\(boundAddress)/metrics")
    }

    /// The address a listening socket is bound to (the port a request for port 0 was given).
    private static func localAddress(of socket: Int32) -> String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var port = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let named = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                getsockname(socket, address, &length) == 0
                    && getnameinfo(address, length, &host, socklen_t(host.count), &port, socklen_t(port.count), NI_NUMERICHOST | NI_NUMERICSERV) == 0
            }
        }
        guard named else { return nil }
        func text(_ characters: [CChar]) -> String { String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        let hostText = text(host), portText = text(port)
        return hostText.contains(":") ? "[\(hostText)]:\(portText)" : "\(hostText):\(portText)"
    }

    private func serve() {
        var failures = 0
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                let cause = errno
                if cause == EINTR || cause == ECONNABORTED { continue }
                // Out of descriptors or memory: said once a run of failures, and waited out
                // rather than spun on; the endpoint never stops.
                if failures == 0 { logger.warning("metrics: cannot take a connection: \(String(cString: strerror(cause))); trying again each second") }
                failures += 1
                sleep(1)
                continue
            }
            failures = 0
            // Validators this daemon starts must not hold a scraper's connection open.
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            answer(connection)
            close(connection)
        }
    }

    /// One request, one answer, then the connection closes. Scrapes are served one at a time, so
    /// each connection has five seconds in all to send its request and take the answer: a client
    /// that trickles bytes is dropped then.
    private func answer(_ connection: Int32) {
        let deadline = ContinuousClock.now + .seconds(5)
        guard let requestLine = Self.readRequestLine(connection, until: deadline) else { return }
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return respond(connection, status: "400 Bad Request", body: Array("bad request\n".utf8)) }
        guard parts[0] == "GET" || parts[0] == "HEAD" else { return respond(connection, status: "405 Method Not Allowed", body: Array("GET /metrics\n".utf8)) }
        let target = parts[1].split(separator: "?", maxSplits: 1).first ?? ""
        guard target == "/metrics" else { return respond(connection, status: "404 Not Found", body: Array("GET /metrics\n".utf8)) }
        sample()
        respond(connection, status: "200 OK", body: registry.emitToBuffer(), type: "text/plain; version=0.0.4; charset=utf-8", headOnly: parts[0] == "HEAD", until: deadline)
    }

    /// Waits until `connection` is ready for `events` or `deadline` passes; whether it is ready.
    private static func wait(_ connection: Int32, for events: Int16, until deadline: ContinuousClock.Instant) -> Bool {
        let left = (deadline - ContinuousClock.now).components
        let milliseconds = Int32(clamping: max(0, left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000))
        var poller = pollfd(fd: connection, events: events, revents: 0)
        return milliseconds > 0 && poll(&poller, 1, milliseconds) == 1 && poller.revents & events != 0
    }

    /// The request's first line; the headers after it are read and ignored (up to 16 KiB in all).
    private static func readRequestLine(_ connection: Int32, until deadline: ContinuousClock.Instant) -> String? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let endOfHeaders: [UInt8] = [13, 10, 13, 10]
        while received.count < 16 * 1024 {
            guard wait(connection, for: Int16(POLLIN), until: deadline) else { return nil }
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count <= 0 { return nil }
            let searchFrom = max(0, received.count - 3)
            received += buffer[0..<count]
            if received[searchFrom...].firstRange(of: endOfHeaders) != nil { break }
        }
        guard let end = received.firstIndex(of: 13) ?? received.firstIndex(of: 10) else { return nil }
        return String(decoding: received[..<end], as: UTF8.self)
    }

    private func respond(
        _ connection: Int32, status: String, body: [UInt8], type: String = "text/plain; charset=utf-8", headOnly: Bool = false,
        until deadline: ContinuousClock.Instant = .now + .seconds(5)
    ) {
        let head = "HTTP/1.1 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        var bytes = Array(head.utf8)
        if !headOnly { bytes += body }
        var sent = 0
        while sent < bytes.count {
            guard Self.wait(connection, for: Int16(POLLOUT), until: deadline) else { return }
            let count = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if count <= 0 { return }
            sent += count
        }
    }
}
