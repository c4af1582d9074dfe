// pin-host CONFIG HOST [PORT]: connects to HOST with the trust policy reachd.toml
// gives it ([[trust.host]]: pins, anchors, ATS baseline) and says what it judged.
import NIOCore
import NIOPosix
import NIOSSL
import ServerTrust

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    print("usage: pin-host CONFIG HOST [PORT]")
    exit(64)
}
let (file, host, port) = (arguments[1], arguments[2], arguments.count > 3 ? Int(arguments[3]) ?? 443 : 443)

let trust = try TrustConfiguration.load(contentsOf: file)
let verifier = ServerTrustVerifier(configuration: trust, host: host) { result in
    // Every judgement, before the handshake goes on or fails.
    print("\(result.host): \(result.verdict.rawValue)\(result.verdict == .trusted ? "" : ": \(result.reason)")")
}
var tls = TLSConfiguration.makeClientConfiguration()
ServerTrustVerifier.applyTLSBaseline(to: &tls) // TLS 1.2+, forward-secret suites only
let context = try NIOSSLContext(configuration: tls)
do {
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(
                    try NIOSSLClientHandler(
                        context: context, serverHostname: host, customVerificationCallbackWithMetadata: verifier.callback))
            }
        }
        .connect(host: host, port: port).get()
    try await channel.close().get()
    print("connected")
} catch {
    print("not connected: \(error)")
    exit(1)
}
