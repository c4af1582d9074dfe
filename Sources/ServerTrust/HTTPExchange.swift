import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import X509

/// One HTTP/1.1 request with a deadline: OCSP queries (RFC 6960 over http),
/// pin-failure reports (report-uri, usually https) and captive-portal API
/// queries (RFC 8908, https). Small on purpose: one request per connection,
/// the whole answer in memory, no redirects.
struct HTTPExchange: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        /// The server answered, but not with what was asked for (an error status, too large an answer).
        var answered = false
    }

    let url: String
    /// POST with `body` of `contentType`; without a body, GET.
    var body: [UInt8]? = nil
    var contentType = ""
    /// For everything: connecting, sending, and reading the answer.
    let timeout: TimeAmount
    /// Responses larger than this are refused (OCSP answers are a few KiB).
    var maximumResponseSize = 1 << 20
    /// How an https server is judged: given its chain (leaf first) and its host
    /// name, nil to go on or why not. Nil: NIOSSL's own check against the system's roots.
    var judge: (@Sendable (_ host: String, _ chain: [Certificate]) async -> String?)?
    /// The address dialled instead of resolving the URL's host (a `connect` of the config).
    var address: String?
    /// The `Accept` header, if any.
    var accept: String?
    /// The interface the connection is bound to (`SO_BINDTOIFINDEX`), if any.
    var interfaceIndex: Int32?

    /// The body of a 2xx answer.
    func send(on group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> [UInt8] {
        try await exchange(on: group).body
    }

    /// A 2xx answer: its body and its `Content-Type`.
    func exchange(
        on group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> (body: [UInt8], contentType: String?) {
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

    private func send(
        to target: Target, on group: any EventLoopGroup, refusal: NIOLockedValueBox<String?>
    ) async throws -> (body: [UInt8], contentType: String?) {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if judge != nil {
            // The judge checks the chain and the name, with reasons, and pins where the config has them.
            configuration.certificateVerification = .noHostnameVerification
            configuration.trustRoots = .certificates([])
        }
        let tls = target.secure ? try NIOSSLContext(configuration: configuration) : nil
        let judge = judge
        let deadline = NIODeadline.now() + timeout
        var bootstrap = ClientBootstrap(group: group).connectTimeout(timeout)
        if let interfaceIndex {
            // SO_BINDTOIFINDEX (Linux 5.0): through the network the URL was learnt on, whichever way the routes point.
            bootstrap = bootstrap.channelOption(
                ChannelOptions.socket(SocketOptionLevel(SOL_SOCKET), SocketOptionName(62)), value: SocketOptionValue(interfaceIndex))
        }
        let channel =
            try await bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        let handler =
                            if let judge {
                                try NIOSSLClientHandler(
                                    context: tls, serverHostname: ServerNamePolicy.addressBytes(target.host) == nil ? target.host : nil
                                ) {
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
        let accept = accept
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.addHandler(collector)
            var head = HTTPRequestHead(version: .http1_1, method: body == nil ? .GET : .POST, uri: target.path)
            head.headers.add(name: "Host", value: target.hostHeader)
            if let accept { head.headers.add(name: "Accept", value: accept) }
            if let body {
                head.headers.add(name: "Content-Type", value: contentType)
                head.headers.add(name: "Content-Length", value: String(body.count))
            }
            head.headers.add(name: "Connection", value: "close")
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            if let body { channel.write(HTTPClientRequestPart.body(.byteBuffer(channel.allocator.buffer(bytes: body))), promise: nil) }
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }.get()
        let (status, answer, answerType) = try await collector.promise.futureResult.get()
        guard (200..<300).contains(status.code) else {
            throw Failure(description: "\(url) answered \(status.code) \(status.reasonPhrase)", answered: true)
        }
        return (answer, answerType)
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

        let promise: EventLoopPromise<(HTTPResponseStatus, [UInt8], String?)>
        let limit: Int
        private let state = NIOLockedValueBox<(status: HTTPResponseStatus, body: [UInt8], contentType: String?)>((.ok, [], nil))

        init(promise: EventLoopPromise<(HTTPResponseStatus, [UInt8], String?)>, limit: Int) {
            self.promise = promise
            self.limit = limit
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case let .head(head):
                state.withLockedValue {
                    $0.status = head.status
                    $0.contentType = head.headers.first(name: "Content-Type")
                }
            case var .body(buffer):
                let tooLarge = state.withLockedValue { state in
                    state.body += buffer.readBytes(length: buffer.readableBytes) ?? []
                    return state.body.count > limit
                }
                if tooLarge {
                    promise.fail(Failure(description: "the answer is larger than \(limit) bytes", answered: true))
                    context.close(promise: nil)
                }
            case .end:
                promise.succeed(state.withLockedValue { ($0.status, $0.body, $0.contentType) })
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
