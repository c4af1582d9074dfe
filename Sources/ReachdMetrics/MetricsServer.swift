import CLinuxShim
import HTTPWire
import SDBus
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// `GET /metrics` on reachd's own event loop: no threads, no NIO. A scrape is a
/// few hundred microseconds of string building, so it is answered inline; what
/// a slow or hostile client could hold is bounded instead: a few connections at
/// once, a small request, and one deadline for the whole exchange.
package final class MetricsServer {
    /// Connections at once (Prometheus scrapes one at a time); beyond it, the oldest
    /// that has not sent its request is dropped, or the new one when all are being answered.
    package static let maximumConnections = 8
    /// The request line and headers; a scraper sends a few hundred bytes.
    package static let maximumRequestBytes = 8192
    /// From accept to the last byte of the answer.
    package static let exchangeTimeout = Duration.seconds(10)

    package let address: MetricsOptions.ListenAddress
    private let listener: OwnedDescriptor
    private let loop: EventLoop
    private let render: (MetricsFormat) -> [UInt8]
    private let log: (String) -> Void
    private var listenerWatch: EventLoop.Watch?
    private var connections: [ObjectIdentifier: Connection] = [:]
    private var sweep: EventLoop.Timer!
    private var sweepArmed = false
    private var resume: EventLoop.Timer!
    private var lastRefusalLogged: ContinuousClock.Instant?

    final class Connection {
        let descriptor: OwnedDescriptor
        let deadline: ContinuousClock.Instant
        var request: [UInt8] = []
        var response: ArraySlice<UInt8> = []
        var watch: EventLoop.Watch?

        init(descriptor: OwnedDescriptor, deadline: ContinuousClock.Instant) {
            self.descriptor = descriptor
            self.deadline = deadline
        }
    }

    /// Binds and listens; `render` builds the exposition at each scrape.
    package init(
        address: MetricsOptions.ListenAddress, loop: EventLoop, log: @escaping (String) -> Void,
        render: @escaping (MetricsFormat) -> [UInt8]
    ) throws {
        self.address = address
        self.loop = loop
        self.log = log
        self.render = render
        listener = try Self.listen(on: address)
        sweep = try loop.timer { [unowned self] in closeExpired() }
        resume = try loop.timer { [unowned self] in listenerWatch = try? watchListener() }
        listenerWatch = try watchListener()
    }

    private static func listen(on address: MetricsOptions.ListenAddress) throws(SystemCallError) -> OwnedDescriptor {
        let family = address.address.family.kernelValue
        let owned = try OwnedDescriptor.taking(
            socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0),
            "metrics: creating a socket for \(address)")
        let descriptor = owned.rawValue
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound: Int32
        switch address.address.family {
        case .v4:
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = address.port.bigEndian
            withUnsafeMutableBytes(of: &socketAddress.sin_addr) { $0.copyBytes(from: address.address.bytes) }
            bound = bind(descriptor, to: &socketAddress)
        case .v6:
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = address.port.bigEndian
            withUnsafeMutableBytes(of: &socketAddress.sin6_addr) { $0.copyBytes(from: address.address.bytes) }
            bound = bind(descriptor, to: &socketAddress)
        }
        guard bound == 0, Glibc.listen(descriptor, 16) == 0 else { throw SystemCallError("metrics: listening on \(address)") }
        return owned
    }

    /// bind(2) with a `sockaddr_in` or `sockaddr_in6`.
    private static func bind<Address>(_ descriptor: Int32, to address: inout Address) -> Int32 {
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<Address>.size)) }
        }
    }

    // MARK: Connections

    private func acceptAll() {
        while true {
            let peer: OwnedDescriptor
            do {
                peer = try .taking(reachd_accept(listener.rawValue), "accepting")
            } catch {
                // Out of descriptors: stop listening for a second rather than wake for nothing.
                if error.errno == .tooManyOpenFiles || error.errno == .tooManyOpenFilesInSystem { pauseListening() }
                return
            }
            if connections.count >= Self.maximumConnections {
                // Make room by dropping the oldest client still to send its request: a real
                // scraper sends it with the connection, so idlers cannot lock Prometheus out.
                guard
                    let idle = connections.values.filter({ $0.response.isEmpty && $0.watch != nil })
                        .min(by: { $0.deadline < $1.deadline })
                else {
                    logRefusal("more than \(Self.maximumConnections) scrapes at once")
                    continue
                }
                finish(idle)
                logRefusal("more than \(Self.maximumConnections) connections; dropped the oldest that sent no request")
            }
            let connection = Connection(descriptor: peer, deadline: .now + Self.exchangeTimeout)
            guard let watch = try? loop.onReadable(peer, { [unowned self, unowned connection] in receive(on: connection) }) else {
                continue
            }
            connection.watch = watch
            connections[ObjectIdentifier(connection)] = connection
            if !sweepArmed {
                sweep.arm(after: Self.exchangeTimeout)
                sweepArmed = true
            }
        }
    }

    private func watchListener() throws(BusError) -> EventLoop.Watch {
        try loop.onReadable(listener) { [unowned self] in acceptAll() }
    }

    private func pauseListening() {
        logRefusal("no descriptor left (\(Errno.tooManyOpenFiles))")
        listenerWatch = nil
        resume.arm(after: .seconds(1))
    }

    /// Once a minute at most: whoever floods the port must not flood the journal.
    private func logRefusal(_ reason: String) {
        if let last = lastRefusalLogged, last.duration(to: .now) < .seconds(60) { return }
        lastRefusalLogged = .now
        log("metrics: closed a connection: \(reason) (said once a minute)")
    }

    private func receive(on connection: Connection) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count: Int
        do {
            count = try buffer.withUnsafeMutableBytes { try connection.descriptor.fileDescriptor.read(into: $0) }
        } catch Errno.wouldBlock {
            return
        } catch {
            return finish(connection)
        }
        guard count > 0 else { return finish(connection) }
        connection.request += buffer.prefix(count)
        let request = HTTPRequest(connection.request)
        switch request {
        case .incomplete where connection.request.count <= Self.maximumRequestBytes:
            return
        case .incomplete:
            answer(
                connection, status: "431 Request Header Fields Too Large",
                body: Array("request larger than \(Self.maximumRequestBytes) bytes\n".utf8))
        case .malformed:
            answer(connection, status: "400 Bad Request", body: Array("not an HTTP request\n".utf8))
        case let .complete(method, target, accept):
            if target.utf8.split(separator: UInt8(ascii: "?"), maxSplits: 1, omittingEmptySubsequences: false).first?.elementsEqual(
                "/metrics".utf8) != true
            {
                answer(connection, status: "404 Not Found", body: Array("reachd serves /metrics only\n".utf8))
            } else if method != "GET" && method != "HEAD" {
                answer(connection, status: "405 Method Not Allowed", headers: "Allow: GET, HEAD\r\n", body: Array("GET /metrics\n".utf8))
            } else {
                let format = MetricsFormat(accept: accept)
                answer(connection, status: "200 OK", contentType: format.contentType, body: render(format), headOnly: method == "HEAD")
            }
        }
    }

    private func answer(
        _ connection: Connection, status: String, contentType: String = "text/plain; charset=utf-8",
        headers: String = "", body: [UInt8], headOnly: Bool = false
    ) {
        connection.watch = nil
        let head =
            "HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n\(headers)Connection: close\r\n\r\n"
        connection.response = (Array(head.utf8) + (headOnly ? [] : body))[...]
        send(on: connection)
    }

    private func send(on connection: Connection) {
        while !connection.response.isEmpty {
            let count: Int
            do {
                count = try connection.response.withUnsafeBytes { try connection.descriptor.fileDescriptor.write($0) }
            } catch Errno.wouldBlock {
                if connection.watch == nil {
                    connection.watch = try? loop.onWritable(connection.descriptor) { [unowned self, unowned connection] in
                        send(on: connection)
                    }
                    if connection.watch == nil { finish(connection) }
                }
                return
            } catch {
                return finish(connection)
            }
            connection.response = connection.response.dropFirst(count)
        }
        // Half-close first: a close with unread input would reset the connection under the client's read.
        shutdown(connection.descriptor.rawValue, Int32(SHUT_WR))
        finish(connection)
    }

    private func finish(_ connection: Connection) {
        connection.watch = nil
        connections.removeValue(forKey: ObjectIdentifier(connection))
    }

    /// Drops exchanges past their deadline: a client that sends nothing, or reads nothing.
    private func closeExpired() {
        let now = ContinuousClock.now
        var next: ContinuousClock.Instant?
        for connection in connections.values {
            if connection.deadline <= now {
                finish(connection)
            } else {
                next = min(next ?? connection.deadline, connection.deadline)
            }
        }
        sweepArmed = next != nil
        if let next { sweep.arm(after: now.duration(to: next)) }
    }
}
