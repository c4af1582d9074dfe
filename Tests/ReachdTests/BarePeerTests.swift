import Foundation
import NamespaceTesting
import ReachabilityBus
import ReachabilityContract
import SDBus
import Testing

/// `PrivateSocket.acceptBarePeer`: a peer served the broker stub and nothing else, which
/// reachability-bench's bare relay publishes through to measure the floor under reachd's
/// own path (BENCHMARKS.md §27). The floor is only one if a client written for reachd
/// connects to it unchanged and receives the signal.
@Suite("a bare peer of the private socket")
struct BarePeerTests {
    @Test("an sd-bus client connects (Hello and AddMatch answered by the stub) and receives StatusChanged with its document")
    func clientReceivesSignal() async throws {
        try await withScratch { scratch in
            let path = scratch.appendingPathComponent("bus").path
            nonisolated(unsafe) let socket = try PrivateSocket(path: path)
            let received = Received()
            let served = Thread {
                guard let connection = try? socket.acceptBarePeer() else { return }
                // Sent once the client has said Hello (before, it would drop the connection), and
                // again until it has matched the signal: a peer's signals go whether it has or not.
                let deadline = ContinuousClock.now + .seconds(10)
                while connection.isOpen, !received.done, ContinuousClock.now < deadline {
                    if connection.mayBeSentUnasked { connection.emit(.statusChanged, "unreachable", #"{"status":"unreachable"}"#) }
                    while (try? connection.process()) == true {}
                    try? connection.wait(timeout: .milliseconds(20))
                }
            }
            served.start()
            let client = try BusConnection.connect(.address("unix:path=\(path)"))
            try client.onSignal(.statusChanged, from: nil) { status, document, _ in received.take(status, document) }
            let deadline = ContinuousClock.now + .seconds(10)
            while !received.done, ContinuousClock.now < deadline {
                while try client.process() {}
                try client.wait(timeout: .milliseconds(50))
            }
            #expect(received.value?.status == "unreachable")
            #expect(received.value?.document == #"{"status":"unreachable"}"#)
            client.close()
        }
    }

    final class Received: @unchecked Sendable {
        private let lock = NSLock()
        private var taken: (status: String, document: String?)?
        var value: (status: String, document: String?)? { lock.withLock { taken } }
        var done: Bool { value != nil }
        func take(_ status: String, _ document: String?) { lock.withLock { if taken == nil { taken = (status, document) } } }
    }
}
