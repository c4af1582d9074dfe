import Foundation
import NamespaceTesting
import ReachabilityClient
import ReachabilityCompat
import Testing

/// What a client says when no daemon answers — which must not look like the network being down.
@Suite("ReachabilityClient without a daemon: it says so")
struct ClientWithoutDaemonTests {
    /// A client of a socket nobody serves, retrying quickly.
    static func client() -> ReachabilityClient {
        ReachabilityClient(
            endpoint: .address("unix:path=/tmp/reachd-nobody-serves-\(getpid())/bus"),
            reconnectDelays: (.milliseconds(10), .milliseconds(50)))
    }

    @Test("connectionStates: looking, then no daemon with the reason; the state resets when nobody subscribes")
    func connectionStates() async {
        let client = Self.client()
        #expect(client.connectionState == .looking)
        var seen: [ReachabilityClient.ConnectionState] = []
        for await state in client.connectionStates {
            seen.append(state)
            if case .noDaemon = state { break }
        }
        // The stream holds the newest state: `looking` comes first unless the attempt failed
        // before the loop's first read (a loaded run as an ordinary user saw only `noDaemon`).
        #expect(seen.count == 1 || (seen.count == 2 && seen.first == .looking), "\(seen)")
        guard case let .noDaemon(reason)? = seen.last else { Issue.record("no noDaemon in \(seen)"); return }
        #expect(reason.contains("reachd-nobody-serves"), "the reason names where it looked: \(reason)")
        #expect(await eventually { client.connectionState == .looking }, "\(client.connectionState)")
    }

    @Test("wait(for:timeout:) gives up saying no daemon; the blocking call fails as no daemon; the async one too")
    func waitSaysNoDaemon() async {
        let client = Self.client()
        await #expect { try await client.wait(for: .reachable, timeout: .milliseconds(300)) } throws: { error in
            guard case let .noDaemon(reason)? = error as? ReachabilityClient.WaitFailure else { return false }
            return reason.contains("reachd-nobody-serves")
        }
        #expect(await client.wait(until: .reachable, timeout: .milliseconds(100)) == nil)
        #expect { try client.blocking.currentPath() } throws: { ($0 as? ReachabilityClient.Failure)?.isNoDaemon == true }
        await #expect(throws: ReachabilityClient.Failure.self) { try await client.currentPath() }
    }

    @Test("a cancelled wait says cancelled")
    func cancelledWait() async {
        let client = Self.client()
        let waiting = Task { try await client.wait(for: .online, timeout: .seconds(30)) }
        try? await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        await #expect { try await waiting.value } throws: { ($0 as? ReachabilityClient.WaitFailure) == .cancelled }
    }

    @Test("ReachabilityCompat pointed at a socket nobody serves falls back to this process, and says so")
    func compatFallsBack() {
        let manager = NetworkReachabilityManager(endpoint: .address("unix:path=/tmp/reachd-nobody-serves-\(getpid())/bus"))!
        _ = manager.status
        #expect(manager.backend == .inProcess)
    }
}
