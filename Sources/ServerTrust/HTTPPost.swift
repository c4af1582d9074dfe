import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import X509

/// One HTTP/1.1 POST with a deadline: OCSP queries (RFC 6960 over http) and
/// pin-failure reports (report-uri, usually https). Small on purpose: one
/// request per connection, the whole answer in memory, no redirects.
struct HTTPPost: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let url: String
    let body: [UInt8]
    let contentType: String
    /// For everything: connecting, sending, and reading the answer.
    let timeout: TimeAmount
    /// Responses larger than this are refused (OCSP answers are a few KiB).
    var maximumResponseSize = 1 << 20
    /// How an https server is judged: given its chain (leaf first) and its host
    /// name, nil to go on or why not. Nil: NIOSSL's own check against the system's roots.
    var judge: (@Sendable (_ host: String, _ chain: [Certificate]) async -> String?)?
    /// The address dialled instead of resolving the URL's host (a `connect` of the config).
    var address: String?

    /// The body of a 2xx answer.
    func send(on group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> [UInt8] {
        let target = try Target(url)
        // Why the judge refused the server: the handshake's own error says only that it failed.
        let refusal = NIOLockedValueBox<String?>(nil)
        do {
            return try await send(to: target, on: group, refusal: refusal)
        } catch {
            if let reason = refusal.withLockedValue({ $0 }) { throw Failure(description: "\(target.host) is not trusted: \(reason)") }
            throw error
        }
    }

    private func send(to target: Target, on group: any EventLoopGroup, refusal: NIOLockedValueBox<String?>) async throws -> [UInt8] {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if judge != nil {
            // The judge checks the chain and the name, with reasons, and pins where the config has them.
            configuration.certificateVerification = .noHostnameVerification
            configuration.trustRoots = .certificates([])
        }
        let tls = target.secure ? try NIOSSLContext(configuration: configuration) : nil
        let judge = judge
        let deadline = NIODeadline.now() + timeout
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        let handler = if let judge {
                            try NIOSSLClientHandler(context: tls, serverHostname: ServerNamePolicy.addressBytes(target.host) == nil ? target.host : nil) {
                                certificates, promise in
                                promise.completeWithTask {
                                    let chain = certificates.compactMap { try? Certificate(derEncoded: $0.toDERBytes()) }
                                    guard let reason = await judge(target.host, chain) else { return .certificateVerified }
                                    refusal.withLockedValue { $0 = reason }
                                    return .failed
                                }
                            }
                        } else {
                            try NIOSSLClientHandler(context: tls, serverHostname: target.host)
                        }
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                }
            }
            .connect(host: address ?? target.host, port: target.port).get()
        defer { channel.close(promise: nil) }

        let collector = ResponseCollector(promise: channel.eventLoop.makePromise(), limit: maximumResponseSize)
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) {
            collector.promise.fail(Failure(description: "no answer from \(url) within \(timeout.nanoseconds / 1_000_000) ms"))
        }
        defer { timer.cancel() }
        let contentType = contentType
        let body = body
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.addHandler(collector)
            var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: target.path)
            head.headers.add(name: "Host", value: target.hostHeader)
            head.headers.add(name: "Content-Type", value: contentType)
            head.headers.add(name: "Content-Length", value: String(body.count))
            head.headers.add(name: "Connection", value: "close")
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            channel.write(HTTPClientRequestPart.body(.byteBuffer(channel.allocator.buffer(bytes: body))), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }.get()
        let (status, answer) = try await collector.promise.futureResult.get()
        guard (200..<300).contains(status.code) else {
            throw Failure(description: "\(url) answered \(status.code) \(status.reasonPhrase)")
        }
        return answer
    }

    /// The parts of an http(s) URL a request needs.
    struct Target: Sendable {
        let secure: Bool
        let host: String
        let port: Int
        let path: String
        let hostHeader: String

        init(_ url: String) throws {
            let rest: Substring
            if url.lowercased().hasPrefix("http://") {
                secure = false
                rest = url.dropFirst(7)
            } else if url.lowercased().hasPrefix("https://") {
                secure = true
                rest = url.dropFirst(8)
            } else {
                throw Failure(description: "\(url) is not an http:// or https:// URL")
            }
            let authority = rest.prefix { $0 != "/" }
            path = rest.dropFirst(authority.count).isEmpty ? "/" : String(rest.dropFirst(authority.count))
            hostHeader = String(authority)
            // [v6]:port, host:port, host
            if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
                host = String(authority[authority.index(after: authority.startIndex)..<close])
                let after = authority[authority.index(after: close)...]
                port = after.hasPrefix(":") ? Int(after.dropFirst()) ?? -1 : (secure ? 443 : 80)
            } else if let colon = authority.lastIndex(of: ":") {
                host = String(authority[..<colon])
                port = Int(authority[authority.index(after: colon)...]) ?? -1
            } else {
                host = String(authority)
                port = secure ? 443 : 80
            }
            guard !host.isEmpty, (1...65535).contains(port) else { throw Failure(description: "\(url) has no usable host and port") }
        }
    }

    private final class ResponseCollector: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPClientResponsePart

        let promise: EventLoopPromise<(HTTPResponseStatus, [UInt8])>
        let limit: Int
        private let state = NIOLockedValueBox<(status: HTTPResponseStatus, body: [UInt8])>((.ok, []))

        init(promise: EventLoopPromise<(HTTPResponseStatus, [UInt8])>, limit: Int) {
            self.promise = promise
            self.limit = limit
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case let .head(head):
                state.withLockedValue { $0.status = head.status }
            case var .body(buffer):
                let tooLarge = state.withLockedValue { state in
                    state.body += buffer.readBytes(length: buffer.readableBytes) ?? []
                    return state.body.count > limit
                }
                if tooLarge {
                    promise.fail(Failure(description: "the answer is larger than \(limit) bytes"))
                    context.close(promise: nil)
                }
            case .end:
                promise.succeed(state.withLockedValue { ($0.status, $0.body) })
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            promise.fail(error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            promise.fail(Failure(description: "the server closed the connection before answering"))
        }
    }
}
