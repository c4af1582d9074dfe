import Foundation
import NamespaceTesting
import ReachabilityBus
import ReachabilityContract
import SDBus
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `PrivateSocket.acceptBarePeer`: a peer served the broker stub and nothing else, which
/// reachability-bench's bare relay publishes through to measure the floor under reachd's
/// own path (BENCHMARKS.md §27). The floor is only one if a client written for reachd
/// connects to it unchanged and receives the signal. And `BusConnection.emit`, which puts
/// a signal's strings into the message as they are, without sd-bus checking them again
/// (BENCHMARKS.md §37): what a client reads must be what was sent, byte for byte.
@Suite("a bare peer of the private socket")
struct BarePeerTests {
    @Test("an sd-bus client connects (Hello and AddMatch answered by the stub) and receives StatusChanged with its document")
    func clientReceivesSignal() async throws {
        let received = try await relayed(.statusChanged, "unreachable", #"{"status":"unreachable"}"#)
        #expect(received?.first == "unreachable")
        #expect(received?.second == #"{"status":"unreachable"}"#)
    }

    @Test(
        "a signal's strings arrive byte for byte: multi-byte UTF-8, an escaped NUL, an empty argument, one argument alone",
        arguments: [
            (
                ReachabilityContract.Signal.statusChanged, "wifi",
                Optional(#"{"interface":{"name":"wlan-é"},"portal":"https://ü.example/🚀","x":"\u0000"}"#)
            ),
            (.statusChanged, "unknown", ""),
            (.pinFailure, #"{"host":"ä.example","reason":"pin mismatch ✗"}"#, nil)
        ])
    func stringsArriveAsSent(signal: ReachabilityContract.Signal, first: String, second: String?) async throws {
        let received = try await relayed(signal, first, second)
        #expect(received?.first == first)
        #expect(received?.second == second)
    }

    @Test("a string with a NUL in it is refused, not sent cut short: a D-Bus string cannot carry one")
    func nulRefused() async throws {
        let results = FirstValue<[Int32]>()
        try await withBarePeer(
            serving: { connection in
                results.take([
                    connection.emit(.statusChanged, "unreachable", "{\u{0}}"), connection.emit(.pinFailure, "a\u{0}b"),
                    connection.emit(.statusChanged, "unreachable", "{}")
                ])
            }, until: { results.value != nil })
        let sent = try #require(results.value)
        #expect(sent[0] == -EINVAL && sent[1] == -EINVAL)
        #expect(sent[2] >= 0)
    }

    /// `signal` with its arguments, sent by a bare peer until a client of it has received it once: what the client read.
    private func relayed(
        _ signal: ReachabilityContract.Signal, _ first: String, _ second: String?
    ) async throws -> (first: String, second: String?)? {
        let received = FirstValue<(first: String, second: String?)>()
        try await withBarePeer(
            serving: { connection in
                // Sent once the client has said Hello (before, it would drop the connection), and
                // again until it has matched the signal: a peer's signals go whether it has or not.
                let deadline = ContinuousClock.now + .seconds(10)
                while connection.isOpen, received.value == nil, ContinuousClock.now < deadline {
                    if connection.mayBeSentUnasked { connection.emit(signal, first, second) }
                    while (try? connection.process()) == true {}
                    try? connection.wait(timeout: .milliseconds(20))
                }
            },
            client: { client in try client.onSignal(signal, from: nil) { first, second, _ in received.take((first, second)) } },
            until: { received.value != nil })
        return received.value
    }

    /// A bare peer of a new private socket, served by `serving` on a thread of its own, and a
    /// client of it, set up by `client` and then processed until `done` or for 10 s.
    private func withBarePeer(
        serving: @escaping @Sendable (BusConnection) -> Void, client setUp: (BusConnection) throws -> Void = { _ in },
        until done: () -> Bool
    ) async throws {
        try await withScratch { scratch in
            let path = scratch.appendingPathComponent("bus").path
            nonisolated(unsafe) let socket = try PrivateSocket(path: path)
            Thread { (try? socket.acceptBarePeer()).map(serving) }.start()
            let client = try BusConnection.connect(.address("unix:path=\(path)"))
            defer { client.close() }
            try setUp(client)
            let deadline = ContinuousClock.now + .seconds(10)
            while !done(), ContinuousClock.now < deadline {
                while try client.process() {}
                try client.wait(timeout: .milliseconds(20))
            }
        }
    }

    /// The first value one thread gives another.
    final class FirstValue<Value: Sendable>: Sendable {
        private let state = Mutex<Value?>(nil)
        var value: Value? { state.withLock { $0 } }
        func take(_ value: Value) { state.withLock { if $0 == nil { $0 = value } } }
    }
}
