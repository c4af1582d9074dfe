import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A connectivity-check endpoint for tests: a Python HTTP server in a namespace whose
/// answer is read from a file at each request (so a test can turn it into a captive
/// portal and back), logging every request it gets. Modes: `204`, `redirect` (302 to
/// `/login?from=probe`), `silent` (never answers), anything else a login page (200).
public final class HTTPProbeServer {
    private static let script = """
        import http.server, socket, sys, time
        address, port, mode_file, log_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
        class Probe(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self):
                with open(log_file, "a") as log: log.write("%f %s %s\\n" % (time.time(), self.client_address[0], self.path))
                mode = open(mode_file).read().strip()
                if mode == "silent":
                    time.sleep(30)
                    return
                if mode == "204":
                    self.send_response(204)
                elif mode == "redirect":
                    self.send_response(302)
                    self.send_header("Location", "/login?from=probe")
                else:
                    body = b"<html><body>Log in to the hotel Wi-Fi</body></html>"
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_header("Content-Length", "0")
                self.end_headers()
            def log_message(self, *arguments): pass
        class Server(http.server.ThreadingHTTPServer):
            address_family = socket.AF_INET6 if ":" in address else socket.AF_INET
            daemon_threads = True
            def server_bind(self):
                if self.address_family == socket.AF_INET6: self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                super().server_bind()
        Server((address, port), Probe).serve_forever()
        """

    let process: Process
    let modeFile: URL
    let logFile: URL

    /// Starts the server on `address`:80 inside `namespace` and waits until it listens.
    public init(in namespace: TestNamespace, address: String, directory: URL, mode: String) async throws {
        let tag = address.contains(":") ? "v6" : "v4"
        modeFile = directory.appendingPathComponent("probe-mode-\(tag)")
        logFile = directory.appendingPathComponent("probe-requests-\(tag).log")
        try mode.write(to: modeFile, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        process = try namespace.startPython(
            Self.script, named: "probe-server.py", in: directory,
            arguments: [address, "80", modeFile.path, logFile.path])
        let shown = address.contains(":") ? "[\(address)]:80" : "\(address):80"
        try await namespace.waitUntilListening("src \(shown)", server: process)
    }

    /// How the next requests are answered.
    public func set(_ mode: String) throws { try mode.write(to: modeFile, atomically: true, encoding: .utf8) }

    /// Requests received so far.
    public var requests: Int { ((try? String(contentsOf: logFile, encoding: .utf8)) ?? "").split(separator: "\n").count }

    /// The paths requested so far.
    public var paths: [String] {
        ((try? String(contentsOf: logFile, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            $0.split(separator: " ").last.map(String.init)
        }
    }

    public func stop() {
        stopServer(process)
    }
}
