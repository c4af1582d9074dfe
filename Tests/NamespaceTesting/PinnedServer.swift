import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// pinned.test: a CA and a server certificate made by openssl, served by
/// `openssl s_server` from a router namespace (an independent TLS peer).
public enum PinnedServer {
    /// A CA and a server certificate for pinned.test, made by openssl in `directory`.
    public static func makePKI(in directory: URL) throws {
        let script = """
            set -e
            cd '\(directory.path)'
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 30 -subj /CN=WiringCA \
              -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr -subj /CN=pinned.test 2>/dev/null
            printf 'subjectAltName=DNS:pinned.test\\nextendedKeyUsage=serverAuth\\nkeyUsage=critical,digitalSignature\\nauthorityKeyIdentifier=keyid\\nbasicConstraints=critical,CA:FALSE\\n' > ext
            openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 10 -extfile ext -out leaf.pem 2>/dev/null
            """
        try run(["/bin/sh", "-c", script])
    }

    /// The SPKI pins (`sha256/…`) of the server's and the CA's key.
    public static func pins(in directory: URL) throws -> [String] {
        try ["leaf.pem", "ca.pem"].map { file in
            "sha256/"
                + (try run([
                    "/bin/sh", "-c",
                    "openssl x509 -in '\(directory.appendingPathComponent(file).path)' -pubkey -noout | openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | base64"
                ]).output
                    .trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// `openssl s_server` for pinned.test on 10.1.0.1:8443 in `router`, once it listens,
    /// presenting `certificate`.pem (and its key): `leaf`, or another made in `directory`.
    public static func serve(in router: TestNamespace, from directory: URL, certificate: String = "leaf") async throws -> Process {
        let server = try start(["ip", "netns", "exec", router.name], accept: "10.1.0.1:8443", from: directory, certificate: certificate)
        try await router.waitUntilListening("sport = :8443", server: server)
        return server
    }

    /// The same on this network namespace's loopback, at a free port (any user may serve there): once it listens.
    public static func serveOnLoopback(from directory: URL, certificate: String = "leaf") async throws -> (server: Process, port: Int) {
        let port = try freeLoopbackPort()
        let server = try start([], accept: "127.0.0.1:\(port)", from: directory, certificate: certificate)
        try await waitUntilListening("sport = :\(port)", server: server)
        return (server, port)
    }

    private static func start(_ prefix: [String], accept: String, from directory: URL, certificate: String) throws -> Process {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments =
            prefix + [
                "openssl", "s_server", "-accept", accept,
                "-cert", directory.appendingPathComponent("\(certificate).pem").path,
                "-key", directory.appendingPathComponent("\(certificate).key").path, "-quiet"
            ]
        server.standardInput = Pipe()
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        return server
    }

    /// A TCP port free on 127.0.0.1 now: bound, and let go for the test's server to take.
    public static func freeLoopbackPort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard descriptor >= 0, bound else {
            throw CommandFailure(command: ["bind 127.0.0.1:0"], result: CommandResult(status: errno, output: "", error: "no free port"))
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A reachd.toml in `directory` whose one host is pinned.test on `connect`:`port` with `pins`.
    public static func config(pins: [String], in directory: URL, connect: String = "10.1.0.1", port: Int = 8443) throws -> URL {
        let config = directory.appendingPathComponent("reachd.toml")
        try """
        [trust]
        timeout = "2s"
        reports = "\(directory.appendingPathComponent("reports").path)"

        [[trust.host]]
        match = "pinned.test"
        port = \(port)
        connect = "\(connect)"
        mode = "public-key"
        pins = [\(pins.map { "\"\($0)\"" }.joined(separator: ", "))]
        anchors = ["ca.pem"]
        """.write(to: config, atomically: true, encoding: .utf8)
        return config
    }
}
