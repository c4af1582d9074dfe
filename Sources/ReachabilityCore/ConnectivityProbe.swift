import Dispatch
import HTTPWire
import IPAddresses
import Netlink
import Synchronization
import SystemCalls

/// The connectivity probe (docs/connectivity.md): an HTTP GET of the configured URL over the
/// path's own interface, one per address family, no redirect followed. Blocks
/// for at most the configured timeout: run it off any event loop.
package struct ConnectivityProbe: Sendable {
    package let uri: ConnectivityOptions.ProbeURI
    package let response: [UInt8]
    package let timeout: Duration
    /// Where the probe's sockets are made: nil for this process's namespace; a monitor
    /// watching another namespace probes from inside it, or it would test the wrong network.
    package let namespace: NetworkNamespace?

    /// nil when `options` names no URL: then nothing is ever contacted.
    package init?(_ options: ConnectivityOptions, namespace: NetworkNamespace? = nil) {
        guard let uri = options.uri else { return nil }
        self.uri = uri
        response = Array(options.response.utf8)
        timeout = options.timeout
        self.namespace = namespace
    }

    /// What one family's probe found.
    package struct Answer: Sendable, Equatable {
        /// `full`, `portal` or `limited`.
        package var connectivity: Connectivity
        /// When `portal`: the redirect's target, if the answer was a redirect.
        package var portal: String?
        /// For the log: "204", "302 to http://…", "connecting to 192.0.2.1:80: Connection refused".
        package var detail: String
        /// The HTTP status, when the answer was HTTP: part of the evidence a report seen behind a portal carries.
        package var httpStatus: Int? = nil
    }

    /// The verdict over every family `path` has a usable route for.
    package struct Verdict: Sendable, Equatable {
        package var connectivity: Connectivity
        package var portal: String?
        /// Per family probed: "ipv4 204", "ipv6 connecting to …: timed out".
        package var details: [String]
        /// The deciding answer's HTTP status, when it was HTTP.
        package var httpStatus: Int? = nil
    }

    /// The whole response is never needed: what decides fits in the head and the first bytes of the body.
    static let responseLimit = 64 * 1024
    /// A login page's URL goes into the document and on the bus: bounded, printable ASCII only.
    static let portalURLLimit = 2048

    /// Probes each family `path` has, at once, over the interface the kernel routes
    /// through (the tunnel under a VPN; for IPv4, the CLAT on a 464XLAT path), and keeps the best answer.
    package func probe(_ path: Path) -> Verdict {
        guard path.status.isReachable else { return Verdict(connectivity: .none, portal: nil, details: []) }
        let families = [path.ipv4 ? IPAddress.Family.v4 : nil, path.ipv6 ? .v6 : nil].compactMap { $0 }
        let answers = Mutex([Answer?](repeating: nil, count: families.count))
        DispatchQueue.concurrentPerform(iterations: families.count) { index in
            let device = path.vpn?.name ?? (families[index] == .v4 ? path.clat?.name : nil) ?? path.interface?.name
            let answer = inNamespace { probe(families[index], device: device) }
            answers.withLock { $0[index] = answer }
        }
        let found = answers.withLock { $0.map { $0! } }
        let best = found.max { $0.connectivity.rank < $1.connectivity.rank }
        return Verdict(
            connectivity: best?.connectivity ?? .limited, portal: best?.portal,
            details: zip(families, found).map { "\($0 == .v4 ? "ipv4" : "ipv6") \($1.detail)" }, httpStatus: best?.httpStatus)
    }

    private func inNamespace(_ body: () -> Answer) -> Answer {
        guard let namespace else { return body() }
        do {
            return try namespace.perform(body)
        } catch {
            return Answer(connectivity: .limited, portal: nil, detail: "\(error)")
        }
    }

    /// One family's answer.
    package func probe(_ family: IPAddress.Family, device: String?) -> Answer {
        let deadline = ContinuousClock.now + timeout
        let addresses: [IPAddress]
        do {
            addresses = try HostResolver.resolve(uri.host).filter { $0.family == family }
        } catch {
            return Answer(connectivity: .limited, portal: nil, detail: "\(error)")
        }
        guard let address = addresses.first else {
            return Answer(connectivity: .limited, portal: nil, detail: "\(uri.host) has no \(family == .v4 ? "IPv4" : "IPv6") address")
        }
        var received: [UInt8] = []
        do {
            let connection = try TCPClient(connectingTo: address, port: uri.port, device: device, deadline: deadline)
            let request =
                "GET \(uri.target) HTTP/1.1\r\nHost: \(uri.hostHeader)\r\nUser-Agent: reachd\r\nAccept: */*\r\nConnection: close\r\n\r\n"
            try connection.send(Array(request.utf8))
            while received.count < Self.responseLimit {
                let bytes = try connection.receive(upTo: Self.responseLimit - received.count)
                if bytes.isEmpty { break }
                received += bytes
                if let answer = judge(received, atEnd: false) { return answer }
            }
        } catch {
            // An answer cut short is still an answer: only silence is `limited`.
            if received.isEmpty { return Answer(connectivity: .limited, portal: nil, detail: "\(error)") }
        }
        if received.isEmpty { return Answer(connectivity: .limited, portal: nil, detail: "closed without answering") }
        return judge(received, atEnd: true) ?? Answer(connectivity: .portal, portal: nil, detail: "an incomplete answer")
    }

    /// The verdict on what was received so far, or nil while it cannot be told yet.
    func judge(_ bytes: [UInt8], atEnd: Bool) -> Answer? {
        guard let head = HTTPResponseHead(bytes) else {
            return atEnd ? Answer(connectivity: .portal, portal: nil, detail: "not an HTTP answer") : nil
        }
        guard head.status == 200 || head.status == 204 else {
            let location = head.status / 100 == 3 ? head.location.flatMap(portalURL) : nil
            return Answer(
                connectivity: .portal, portal: location,
                detail: "\(head.status)" + (location.map { " to \($0)" } ?? ""), httpStatus: head.status)
        }
        if head.status == 204 && response.isEmpty { return Answer(connectivity: .full, portal: nil, detail: "204", httpStatus: 204) }
        guard let body = head.body(of: bytes, atEnd: atEnd, needed: max(response.count, 1)) else { return nil }
        let expected = response.isEmpty ? body.isEmpty : (head.status == 200 && body.starts(with: response))
        return Answer(
            connectivity: expected ? .full : .portal, portal: nil,
            detail: "\(head.status) with \(body.isEmpty ? "an empty body" : expected ? "the expected body" : "another body")",
            httpStatus: head.status)
    }

    /// An absolute URL for the login page (a relative `Location` is taken from the probe's host).
    func portalURL(_ location: [UInt8]) -> String? {
        guard !location.isEmpty, location.count <= Self.portalURLLimit, location.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        let text = String(decoding: location, as: UTF8.self)
        return location.first == UInt8(ascii: "/") && location.dropFirst().first != UInt8(ascii: "/")
            ? "http://\(uri.hostHeader)\(text)" : text
    }
}
