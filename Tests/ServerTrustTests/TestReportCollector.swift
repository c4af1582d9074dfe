import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// An HTTP server on 127.0.0.1 that answers every POST with 204 and keeps the
/// bodies: a report-uri endpoint.
final class TestReportCollector: Sendable {
    let channel: any Channel
    private let received = NIOLockedValueBox<[[UInt8]]>([])
    var url: String { "http://127.0.0.1:\(channel.localAddress!.port!)/pins" }
    var bodies: [[UInt8]] { received.withLockedValue { $0 } }

    /// Listens on `port` of 127.0.0.1 (0: any free one).
    init(port: Int = 0) async throws {
        let received = received
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                child.pipeline.configureHTTPServerPipeline().flatMapThrowing {
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
