// https-with-pins CONFIG URL: an AsyncHTTPClient request under the part of reachd's
// trust policy for the URL's host that a TLSConfiguration carries (its anchors as
// the only roots, the ATS baseline), saying what it cannot enforce.
import AsyncHTTPClient
import Foundation
import ServerTrust

let arguments = CommandLine.arguments
guard arguments.count == 3, let url = URL(string: arguments[2]), let host = url.host else {
    print("usage: https-with-pins CONFIG URL")
    exit(64)
}

let trust = try TrustConfiguration.load(contentsOf: arguments[1])
let policy = try ClientTLSPolicy(configuration: trust, host: host, anchorsOnly: true)
for gap in policy.notEnforced {
    print("not enforced for \(host): \(gap)") // public-key pins need ServerTrustVerifier (pin-host)
}

let client = HTTPClient(
    eventLoopGroupProvider: .singleton,
    configuration: HTTPClient.Configuration(tlsConfiguration: policy.tlsConfiguration))
do {
    let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(10))
    print("HTTP \(response.status.code) from \(host)")
} catch {
    print("refused: \(error)")
}
try await client.shutdown()
