import Crypto
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import SwiftASN1
import X509

/// An HTTP(S) server on 127.0.0.1 that answers every POST with 204 and keeps the
/// bodies: a report-uri endpoint.
final class TestReportCollector: Sendable {
    let channel: any Channel
    private let received = NIOLockedValueBox<[[UInt8]]>([])
    private let secure: Bool
    var url: String { url(host: "127.0.0.1") }
    var bodies: [[UInt8]] { received.withLockedValue { $0 } }

    /// Its URL under another name (dialled at the config's `connect`).
    func url(host: String) -> String { "\(secure ? "https" : "http")://\(host):\(channel.localAddress!.port!)/pins" }

    /// Listens on `port` of 127.0.0.1 (0: any free one); over TLS with `chain` (leaf first) and `key`.
    init(port: Int = 0, chain: [Certificate] = [], key: P256.Signing.PrivateKey? = nil) async throws {
        let received = received
        secure = key != nil
        let context = try key.map { key in
            let certificates = try chain.map { certificate -> NIOSSLCertificateSource in
                var serializer = DER.Serializer()
                try serializer.serialize(certificate)
                return .certificate(try NIOSSLCertificate(bytes: serializer.serializedBytes, format: .der))
            }
            let privateKey = try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem)
            return try NIOSSLContext(
                configuration: .makeServerConfiguration(certificateChain: certificates, privateKey: .privateKey(privateKey)))
        }
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                do {
                    if let context { try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context)) }
                } catch {
                    return child.eventLoop.makeFailedFuture(error)
                }
                return child.pipeline.configureHTTPServerPipeline().flatMapThrowing {
                    try child.pipeline.syncOperations.addHandler(Handler(received: received))
                }
            }
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: port).get()
    }

    func close() async { try? await channel.close() }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let received: NIOLockedValueBox<[[UInt8]]>
        var body: [UInt8] = []

        init(received: NIOLockedValueBox<[[UInt8]]>) { self.received = received }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head: body = []
            case var .body(buffer): body += buffer.readBytes(length: buffer.readableBytes) ?? []
            case .end:
                received.withLockedValue { $0.append(body) }
                var head = HTTPResponseHead(version: .http1_1, status: .noContent)
                head.headers.add(name: "Content-Length", value: "0")
                context.write(wrapOutboundOut(.head(head)), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
