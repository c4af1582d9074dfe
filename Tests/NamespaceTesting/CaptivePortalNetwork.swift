import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A network that says it is a captive portal (RFC 8910/8908), for tests: a router
/// sending IPv6 router advertisements with the captive-portal option from a raw
/// ICMPv6 socket (Debian 12's radvd cannot send option 37), and an HTTPS server
/// for the API whose answer a test switches, both in the router's namespace.
public enum CaptivePortalNetwork {
    /// Sends a router advertisement out of `interface` every `interval` seconds, as
    /// `settings` (JSON, re-read before each) says: `lifetime` (the router lifetime,
    /// s; 0 withdraws the router), `uri` (the option; "" sends none) and `options` (more
    /// options, as hex: a PREF64, or a malformed one). Hop limit
    /// 255 and the link-local source, as a router's; the kernel fills the checksum.
    static let advertiser = """
        import json, socket, struct, sys, time
        interface, settings, interval = sys.argv[1], sys.argv[2], float(sys.argv[3])
        index = socket.if_nametoindex(interface)
        sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
        while True:
            try:
                wanted = json.load(open(settings))
            except Exception:
                time.sleep(0.1)
                continue
            packet = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, wanted["lifetime"], 0, 0)
            uri = wanted["uri"].encode()
            if uri:
                units = (2 + len(uri) + 7) // 8
                packet += struct.pack("!BB", 37, units) + uri + b"\\0" * (units * 8 - 2 - len(uri))
            packet += bytes.fromhex(wanted.get("options", ""))
            try:
                sock.sendto(packet, ("ff02::1", 0, 0, index))
            except OSError:
                pass
            time.sleep(interval)
        """

    /// An RFC 8908 API over HTTPS: GET answers the file `answer` (re-read at each request)
    /// as `application/captive+json` — or, when it starts with `html:`, the rest as a
    /// web page; every request is logged with its path and `Accept` header.
    static let api = """
        import http.server, socket, ssl, sys, time
        address, port, certificate, key, answer_file, log_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
        class API(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self):
                with open(log_file, "a") as log: log.write("%f %s %s\\n" % (time.time(), self.path, self.headers.get("Accept")))
                answer = open(answer_file).read()
                media = "application/captive+json"
                if answer.startswith("html:"):
                    answer, media = answer[5:], "text/html"
                body = answer.encode()
                self.send_response(200)
                self.send_header("Content-Type", media)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *arguments): pass
        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
        server = Server((address, port), API)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        server.serve_forever()
        """

    /// A CA (`capport-ca.pem`) and a certificate for the IP address `address` it signed, made by openssl in `directory`.
    public static func makePKI(for address: String, in directory: URL) throws {
        try run([
            "/bin/sh", "-c",
            """
            set -e
            cd '\(directory.path)'
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout capport-ca.key -out capport-ca.pem -days 30 \
              -subj /CN=CapportCA -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout capport.key -out capport.csr -subj /CN=capport 2>/dev/null
            printf 'subjectAltName=IP:\(address)\\nextendedKeyUsage=serverAuth\\nkeyUsage=critical,digitalSignature\\nauthorityKeyIdentifier=keyid\\nbasicConstraints=critical,CA:FALSE\\n' > capport.ext
            openssl x509 -req -in capport.csr -CA capport-ca.pem -CAkey capport-ca.key -CAcreateserial -days 10 -extfile capport.ext -out capport.pem 2>/dev/null
            """
        ])
    }

    /// The API server: `https://ADDRESS:PORT/…` in `namespace`, answering `answer` until `set` changes it.
    public final class APIServer {
        var process: Process!
        let answerFile: URL
        let logFile: URL

        /// Starts it (the PKI of `makePKI` in `directory`) and waits until it listens.
        public init(in namespace: TestNamespace, address: String, port: Int = 4443, directory: URL, answer: String) async throws {
            answerFile = directory.appendingPathComponent("capport-answer")
            logFile = directory.appendingPathComponent("capport-requests.log")
            try answer.write(to: answerFile, atomically: true, encoding: .utf8)
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
            process = try namespace.startPython(
                CaptivePortalNetwork.api, named: "capport-api.py", in: directory,
                arguments: [
                    address, String(port), directory.appendingPathComponent("capport.pem").path,
                    directory.appendingPathComponent("capport.key").path, answerFile.path, logFile.path
                ])
            try await namespace.waitUntilListening("sport = :\(port)", server: process)
        }

        /// How the next requests are answered.
        public func set(_ answer: String) throws { try answer.write(to: answerFile, atomically: true, encoding: .utf8) }

        /// Each request so far: its path and Accept header.
        public var requests: [String] {
            ((try? String(contentsOf: logFile, encoding: .utf8)) ?? "").split(separator: "\n").map {
                $0.split(separator: " ", maxSplits: 1).last.map(String.init) ?? ""
            }
        }

        public func stop() {
            stopServer(process)
        }
    }

    /// The router's advertisements out of `interface` in `namespace`.
    public final class Advertiser {
        var process: Process!
        let settings: URL

        /// Starts sending once the interface's link-local address is usable (DAD done).
        public init(
            in namespace: TestNamespace, interface: String, directory: URL, lifetime: Int, uri: String, options: String = "",
            interval: Double = 1
        ) async throws {
            settings = directory.appendingPathComponent("advertiser.json")
            let deadline = ContinuousClock.now + .seconds(10)
            while try namespace.exec(["ip", "-6", "addr", "show", "dev", interface, "scope", "link", "-tentative"]).output.isEmpty {
                guard ContinuousClock.now < deadline else {
                    throw CommandFailure(
                        command: ["ip"],
                        result: CommandResult(status: -1, output: "", error: "\(interface) has no usable link-local address"))
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            try set(lifetime: lifetime, uri: uri, options: options)
            process = try namespace.startPython(
                CaptivePortalNetwork.advertiser, named: "advertiser.py", in: directory,
                arguments: [interface, settings.path, String(interval)])
        }

        /// What the next advertisements say.
        public func set(lifetime: Int, uri: String, options: String = "") throws {
            let values: [String: Any] = ["lifetime": lifetime, "uri": uri, "options": options]
            let text = String(decoding: try JSONSerialization.data(withJSONObject: values), as: UTF8.self)
            try text.write(to: settings, atomically: true, encoding: .utf8)
        }

        public func stop() {
            stopServer(process)
        }
    }

    /// RFC 8781's PREF64 option, as hex for `Advertiser`'s `options`: `prefix` (its first
    /// 96 bits), a prefix length code (0–5 for 96, 64, 56, 48, 40, 32; others are invalid)
    /// and a lifetime in seconds (a multiple of 8).
    public static func pref64(_ prefix: String, code: Int, lifetime: Int) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        _ = inet_pton(AF_INET6, prefix, &bytes)
        let field = (lifetime / 8) << 3 | code
        let option = [38, 2, UInt8(field >> 8), UInt8(field & 0xff)] + bytes.prefix(12)
        return option.map { String(format: "%02x", $0) }.joined()
    }
}
