import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import SystemPackage
import X509

#if canImport(Glibc)
import Glibc
#endif

/// Connects to a TLS server and captures what it presents — the chain, leaf
/// first, and the negotiated protocol — without judging it: judging is the
/// policy's job, with reasons NIOSSL cannot give (it only says
/// CERTIFICATE_VERIFY_FAILED). A silent or slow peer costs at most the timeouts.
public struct TLSProbe: Sendable {
    /// The longest a TCP connection may take.
    public var connectTimeout: TimeAmount
    /// The longest the TLS handshake may take once connected.
    public var handshakeTimeout: TimeAmount
    /// Protocol bounds offered (the diagnose command narrows them).
    public var minimumTLSVersion: TLSVersion
    /// The newest version offered; nil: the newest the library has.
    public var maximumTLSVersion: TLSVersion?
    /// The TLS 1.2 cipher suites offered; nil: the library's defaults.
    public var cipherSuites: [NIOTLSCipher]?

    /// A probe.
    ///
    /// - Parameters:
    ///   - connectTimeout: The longest the TCP connect may take.
    ///   - handshakeTimeout: The longest the TLS handshake may take.
    ///   - minimumTLSVersion: The oldest version offered.
    ///   - maximumTLSVersion: The newest version offered; nil: the newest there is.
    ///   - cipherSuites: The TLS 1.2 cipher suites offered; nil: the defaults.
    public init(
        connectTimeout: TimeAmount = .seconds(5), handshakeTimeout: TimeAmount = .seconds(5),
        minimumTLSVersion: TLSVersion = .tlsv1, maximumTLSVersion: TLSVersion? = nil,
        cipherSuites: [NIOTLSCipher]? = nil
    ) {
        self.connectTimeout = connectTimeout
        self.handshakeTimeout = handshakeTimeout
        self.minimumTLSVersion = minimumTLSVersion
        self.maximumTLSVersion = maximumTLSVersion
        self.cipherSuites = cipherSuites
    }

    /// What the server presented.
    public struct Presented: Sendable, Equatable {
        /// The certificates that parsed, in the order sent.
        public var chain: [Certificate]
        /// The version the handshake negotiated.
        public var tlsVersion: TLSVersion?
        /// Why a presented certificate could not be used (a 1024-bit RSA key, bad DER); nil when all parsed.
        public var undecodable: String?

        /// What a server presented.
        public init(chain: [Certificate], tlsVersion: TLSVersion? = nil, undecodable: String? = nil) {
            self.chain = chain
            self.tlsVersion = tlsVersion
            self.undecodable = undecodable
        }
    }

    /// Why nothing was presented.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// No TLS server answered: refused, timed out, no route, no such name.
        case unreachable(String)
        /// A server answered but the handshake failed (no common protocol or cipher, …).
        case handshakeFailed(String)

        public var description: String {
            switch self {
            case let .unreachable(reason): "unreachable: \(reason)"
            case let .handshakeFailed(reason): "handshake failed: \(reason)"
            }
        }

        /// The reason alone.
        public var reason: String {
            switch self {
            case let .unreachable(reason), let .handshakeFailed(reason): reason
            }
        }
    }

    /// Connects to `address` (default: `host`) on `port`, with SNI `host` unless it is an IP address.
    public func probe(
        host: String, port: Int, connectingTo address: String? = nil,
        on group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async -> Result<Presented, Failure> {
        var configuration = TLSConfiguration.makeClientConfiguration()
        // The policy checks names (with reasons); NIOSSL's own check would refuse
        // before the chain is captured.
        configuration.certificateVerification = .noHostnameVerification
        // Nothing is verified against roots here, so none are loaded (loading the
        // system's bundle costs more than the handshake).
        configuration.trustRoots = .certificates([])
        configuration.minimumTLSVersion = minimumTLSVersion
        configuration.maximumTLSVersion = maximumTLSVersion
        if let cipherSuites { configuration.cipherSuiteValues = cipherSuites }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            return .failure(.handshakeFailed("no TLS context for these settings (\(error))"))
        }
        let serverName = ServerNamePolicy.addressBytes(host) == nil ? host : nil
        let captured = NIOLockedValueBox<[NIOSSLCertificate]>([])
        // Kept here, not looked up in the pipeline later: a server that closes right
        // after the handshake tears the pipeline down before connect() returns.
        let watcher = HandshakeWatcher(timeout: handshakeTimeout)

        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(connectTimeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let handler = try NIOSSLClientHandler(context: context, serverHostname: serverName) { certificates, promise in
                            // Accept whatever is presented: the policy judges it afterwards, with reasons.
                            captured.withLockedValue { $0 = certificates }
                            promise.succeed(.certificateVerified)
                        }
                        try channel.pipeline.syncOperations.addHandler(handler)
                        try channel.pipeline.syncOperations.addHandler(watcher)
                    }
                }
                .connect(host: address ?? host, port: port).get()
        } catch {
            return .failure(.unreachable(Self.describe(error)))
        }
        defer { channel.close(promise: nil) }
        let version: TLSVersion?
        do {
            version = try await watcher.completed.futureResult.get()
        } catch let error as HandshakeWatcher.TimedOut {
            return .failure(.unreachable("no TLS handshake within \(error.timeout.nanoseconds / 1_000_000) ms"))
        } catch {
            return .failure(.handshakeFailed(Self.describe(error)))
        }
        var presented = Presented(chain: [], tlsVersion: version)
        for (index, certificate) in captured.withLockedValue({ $0 }).enumerated() {
            do {
                presented.chain.append(try Certificate(derEncoded: certificate.toDERBytes()))
            } catch {
                presented.undecodable =
                    presented.undecodable
                    ?? "certificate \(index + 1) of the presented chain cannot be used (\(error)); RSA keys below 2048 bits are refused"
            }
        }
        return .success(presented)
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError, let first = error.connectionErrors.first {
            return describe(first.error)
        }
        if let error = error as? NIOConnectionError, let dns = error.dnsAError ?? error.dnsAAAAError {
            return "cannot resolve \(error.host): \(dns)"
        }
        if let error = error as? IOError { return "\(Errno(rawValue: error.errnoCode))" }
        if let error = error as? ChannelError, case .connectTimeout = error { return "connection timed out" }
        return "\(error)"
    }
}

/// Completes with the negotiated version when the TLS handshake is done; fails
/// on error, on close, or when `timeout` passes first.
final class HandshakeWatcher: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    struct TimedOut: Error { let timeout: TimeAmount }

    let timeout: TimeAmount
    private let promise = NIOLockedValueBox<EventLoopPromise<TLSVersion?>?>(nil)

    init(timeout: TimeAmount) { self.timeout = timeout }

    /// Exists once the handler is in a pipeline.
    var completed: EventLoopPromise<TLSVersion?> { promise.withLockedValue { $0! } }

    func handlerAdded(context: ChannelHandlerContext) {
        let promise = context.eventLoop.makePromise(of: TLSVersion?.self)
        self.promise.withLockedValue { $0 = promise }
        let timeout = timeout
        let timer = context.eventLoop.scheduleTask(in: timeout) { promise.fail(TimedOut(timeout: timeout)) }
        promise.futureResult.whenComplete { _ in timer.cancel() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent {
            completed.succeed(try? context.pipeline.syncOperations.nioSSL_tlsVersion())
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        completed.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        completed.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}
