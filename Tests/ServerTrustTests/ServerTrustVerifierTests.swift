import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import ServerTrust
import TestTraits
import Testing
import X509

@Suite("In-app verification callback (NIOSSL client and server)", .ownThreads)
struct ServerTrustVerifierTests {
    let root: TestAuthority
    let key = P256.Signing.PrivateKey()
    let leaf: Certificate

    init() throws {
        root = try .root("App Root", center: Date())
        leaf = try root.leaf(["localhost"], key: Certificate.PrivateKey(key))
    }

    /// Connects to `server` with the verifier's callback; the handshake's outcome and the result seen.
    func connect(_ server: TestTLSServer, pins: Set<PublicKeyPin>, enforce: Bool = true) async throws -> (Bool, HostTrustResult?) {
        var configuration = TrustConfiguration()
        let pattern = try HostPattern("localhost")
        try configuration.hosts.add(
            pattern,
            HostTrustConfiguration(
                pattern: pattern, policy: try TrustPolicy(mode: .publicKey, pins: pins),
                pinSet: try PinSet(pins: pins, enforce: enforce)))
        let seen = NIOLockedValueBox<HostTrustResult?>(nil)
        let verifier = ServerTrustVerifier(configuration: configuration, host: "localhost", systemAnchors: [root.certificate]) { result in
            seen.withLockedValue { $0 = result }
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        ServerTrustVerifier.applyTLSBaseline(to: &tls)
        let completed = try await handshake(with: server, tls, callback: verifier.callback)
        return (completed, seen.withLockedValue { $0 })
    }

    @Test("a pinned chain connects; a wrong pin fails the handshake; report-only lets it through")
    func enforcement() async throws {
        let server = try await TestTLSServer(chain: [leaf], key: key)
        defer { Task { await server.close() } }
        let backup = PublicKeyPin(sha256: Array(repeating: 5, count: 32))!
        let wrong = PublicKeyPin(sha256: Array(repeating: 4, count: 32))!

        let (pinnedOK, pinned) = try await connect(server, pins: [try PublicKeyPin(certificate: root.certificate), backup])
        #expect(pinnedOK)
        #expect(pinned?.verdict == .trusted)

        let (wrongOK, mismatch) = try await connect(server, pins: [wrong, backup])
        #expect(!wrongOK)
        #expect(mismatch?.verdict == .pinMismatch)

        let (reportOnlyOK, reported) = try await connect(server, pins: [wrong], enforce: false)
        #expect(reportOnlyOK)
        #expect(reported?.verdict == .pinMismatch && reported?.enforced == false)
    }
}

/// Whether a TLS handshake with `server` as "localhost" completes under `tls` (and `callback`, when given).
func handshake(
    with server: TestTLSServer, _ tls: TLSConfiguration,
    callback: NIOSSLCustomVerificationCallbackWithMetadata? = nil
) async throws -> Bool {
    let context = try NIOSSLContext(configuration: tls)
    // Kept here, not looked up in the pipeline: a refused handshake may tear the pipeline down before connect() returns.
    let installed = NIOLockedValueBox<HandshakeOutcome?>(nil)
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                let tlsHandler =
                    if let callback {
                        try NIOSSLClientHandler(
                            context: context, serverHostname: "localhost", customVerificationCallbackWithMetadata: callback)
                    } else {
                        try NIOSSLClientHandler(context: context, serverHostname: "localhost")
                    }
                try channel.pipeline.syncOperations.addHandler(tlsHandler)
                let handler = HandshakeOutcome(promise: channel.eventLoop.makePromise())
                installed.withLockedValue { $0 = handler }
                try channel.pipeline.syncOperations.addHandler(handler)
            }
        }
        .connect(host: "127.0.0.1", port: server.port).get()
    defer { channel.close(promise: nil) }
    let outcome = try #require(installed.withLockedValue { $0 })
    return (try? await outcome.promise.futureResult.get()) != nil
}

/// Succeeds when the TLS handshake completes, fails when it does not.
final class HandshakeOutcome: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny
    let promise: EventLoopPromise<Void>

    init(promise: EventLoopPromise<Void>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { promise.succeed(()) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { promise.fail(error) }
    func channelInactive(context: ChannelHandlerContext) { promise.fail(ChannelError.eof) }
}
