import Crypto
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import ServerTrust
import SwiftASN1
import X509

/// ServerTrust's costs: evaluating one chain (no network), and re-validating
/// `hosts` pinned TLS servers on 127.0.0.1 with the TrustChecker, against curl
/// --pinnedpubkey checking the same servers one after the other.
struct TrustBenchmark {
    let hosts: Int
    let rounds: Int

    struct Result {
        var microsecondsPerChain: Double
        var microsecondsPerChainSystemRoots: Double
        var checkerMilliseconds: [Double]
        var curlMilliseconds: [Double]
        var allTrusted: Bool
        var curlAllPinned: Bool
    }

    func run() async throws -> Result {
        let rootKey = P256.Signing.PrivateKey()
        let root = try Self.certificate(subject: "Bench Root", key: rootKey.publicKey, issuer: nil, issuerKey: rootKey, names: [])
        let intermediateKey = P256.Signing.PrivateKey()
        let intermediate = try Self.certificate(
            subject: "Bench Intermediate", key: intermediateKey.publicKey, issuer: root, issuerKey: rootKey, names: [])
        let leafKey = P256.Signing.PrivateKey()
        let names = (0..<hosts).map { "h\($0).bench.test" }
        let leaf = try Self.certificate(
            subject: "Bench Server", key: leafKey.publicKey, issuer: intermediate, issuerKey: intermediateKey, names: names)
        let chain = [leaf, intermediate]
        let backup = PublicKeyPin(sha256: Array(repeating: 7, count: 32))!
        let pins: Set = [try PublicKeyPin(certificate: intermediate), backup]

        // 1. One chain, no network: validation to the anchor, the name, the pins, the baseline.
        let policy = try TrustPolicy(mode: .publicKey, pins: pins, requiresTLSBaseline: true)
        let systemRoots = (try? ChainValidator.systemAnchors()) ?? []
        func perChain(anchors: [Certificate]) async -> Double {
            let count = 2000
            let evaluator = policy.evaluator(systemAnchors: anchors)
            let start = now()
            for _ in 0..<count {
                var context = ServerTrustContext(host: names[0], presented: chain)
                _ = await evaluator.evaluate(&context)
            }
            return Double(now() - start) / 1e3 / Double(count)
        }
        let alone = await perChain(anchors: [root])
        let withSystem = await perChain(anchors: systemRoots + [root])

        // 2. The servers: one NIOSSL server each, closing once the handshake is done.
        var servers: [any Channel] = []
        defer { for server in servers { server.close(promise: nil) } }
        let tls = try NIOSSLContext(
            configuration: .makeServerConfiguration(
                certificateChain: try chain.map { .certificate(try NIOSSLCertificate(bytes: try Self.der($0), format: .der)) },
                privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(leafKey.pemRepresentation.utf8), format: .pem))))
        for _ in names {
            servers.append(
                try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .childChannelInitializer { child in
                        child.eventLoop.makeCompletedFuture {
                            try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                            try child.pipeline.syncOperations.addHandler(CloseAfterHandshake())
                        }
                    }
                    .bind(host: "127.0.0.1", port: 0).get())
        }
        let ports = servers.map { $0.localAddress!.port! }

        var configuration = TrustConfiguration()
        for (name, port) in zip(names, ports) {
            let pattern = try HostPattern(name)
            try configuration.hosts.add(
                pattern,
                HostTrustConfiguration(
                    pattern: pattern, port: port, connect: "127.0.0.1", policy: policy, pinSet: try PinSet(pins: pins)))
        }
        let checker = TrustChecker(configuration: configuration, systemAnchors: systemRoots + [root])
        var checkerTimes: [Double] = []
        var allTrusted = true
        for _ in 0..<rounds {
            let start = now()
            let round = await checker.checkAll()
            checkerTimes.append(milliseconds(now() - start))
            allTrusted = allTrusted && round.overall == .ok
            if round.overall != .ok, let failed = round.hosts.first(where: { $0.verdict != .trusted }) {
                print("   round failed: \(failed.host): \(failed.verdict.rawValue): \(failed.reason)")
            }
        }

        // curl pins the leaf's key only (--pinnedpubkey), after validating to --cacert.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("trust-bench-\(UUID())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let rootFile = scratch.appendingPathComponent("root.pem").path
        try root.serializeAsPEM().pemString.write(toFile: rootFile, atomically: true, encoding: .utf8)
        let leafPin = "sha256//" + Data(try PublicKeyPin(certificate: leaf).sha256).base64EncodedString()
        var curlTimes: [Double] = []
        var curlAllPinned = true
        for _ in 0..<min(rounds, 3) {
            let start = now()
            for (name, port) in zip(names, ports) {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
                process.arguments = [
                    "-s", "-o", "/dev/null", "--max-time", "5", "--cacert", rootFile, "--pinnedpubkey", leafPin,
                    "--resolve", "\(name):\(port):127.0.0.1", "https://\(name):\(port)/"
                ]
                try process.run()
                process.waitUntilExit()
                // 52: empty reply — the server closes after the handshake, so the pin was accepted.
                curlAllPinned = curlAllPinned && process.terminationStatus == 52
            }
            curlTimes.append(milliseconds(now() - start))
        }
        return Result(
            microsecondsPerChain: alone, microsecondsPerChainSystemRoots: withSystem, checkerMilliseconds: checkerTimes,
            curlMilliseconds: curlTimes, allTrusted: allTrusted, curlAllPinned: curlAllPinned)
    }

    static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    static func certificate(
        subject: String, key: P256.Signing.PublicKey, issuer: Certificate?, issuerKey: P256.Signing.PrivateKey,
        names: [String]
    ) throws -> Certificate {
        let name = try DistinguishedName { CommonName(subject) }
        let isCA = names.isEmpty
        let now = Date()
        return try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key), notValidBefore: now - 3600, notValidAfter: now + 86400,
            issuer: issuer?.subject ?? name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                if isCA {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    Critical(KeyUsage(keyCertSign: true))
                } else {
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([.serverAuth])
                    SubjectAlternativeNames(names.map { .dnsName($0) })
                }
                SubjectKeyIdentifier(hash: .init(key))
                if let issuer, let identifier = try issuer.extensions.subjectKeyIdentifier?.keyIdentifier {
                    AuthorityKeyIdentifier(keyIdentifier: identifier)
                }
            },
            issuerPrivateKey: .init(issuerKey))
    }
}

/// Closes the connection once the TLS handshake is done: the benchmark measures trust checks, not HTTP.
private final class CloseAfterHandshake: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }
}
