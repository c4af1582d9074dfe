import Crypto
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import SwiftASN1
import X509

/// A TLS server on 127.0.0.1 for the tests: NIOSSL serving a given chain, or a
/// peer that accepts and never says anything.
final class TestTLSServer: @unchecked Sendable {
    let channel: any Channel
    var port: Int { channel.localAddress!.port! }

    /// Serves `chain` (leaf first) with `key`, within the protocol bounds and cipher suites given.
    convenience init(chain: [Certificate], key: P256.Signing.PrivateKey, maximumTLSVersion: TLSVersion? = nil) async throws {
        try await self.init(chain: chain, privateKey: Certificate.PrivateKey(key), maximumTLSVersion: maximumTLSVersion)
    }

    init(
        chain: [Certificate], privateKey key: Certificate.PrivateKey, minimumTLSVersion: TLSVersion = .tlsv1,
        maximumTLSVersion: TLSVersion? = nil, cipherSuites: [NIOTLSCipher]? = nil, closeAfterHandshake: Bool = false
    ) async throws {
        let certificates = try chain.map { certificate -> NIOSSLCertificateSource in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return .certificate(try NIOSSLCertificate(bytes: serializer.serializedBytes, format: .der))
        }
        let privateKey = try NIOSSLPrivateKey(bytes: Array(try key.serializeAsPEM().pemString.utf8), format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: certificates, privateKey: .privateKey(privateKey))
        configuration.minimumTLSVersion = minimumTLSVersion
        configuration.maximumTLSVersion = maximumTLSVersion
        if let cipherSuites { configuration.cipherSuiteValues = cipherSuites }
        let context = try NIOSSLContext(configuration: configuration)
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    if closeAfterHandshake { try child.pipeline.syncOperations.addHandler(CloseAfterHandshake()) }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    /// Accepts connections and never answers.
    init(silent: Void) async throws {
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func close() async { try? await channel.close() }
}

/// Closes the connection as soon as the handshake is done, as some servers do.
final class CloseAfterHandshake: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }
}
