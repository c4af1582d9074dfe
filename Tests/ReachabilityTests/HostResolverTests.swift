import Dispatch
import IPAddresses
import Synchronization
import SystemCalls
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Resolution within a caller's timeout: the resolver itself is a seam, so a slow one needs no DNS server.
@Suite("HostResolver: a name within the caller's timeout")
struct HostResolverTests {
    @Test("a resolver slower than the timeout: the caller has its failure at the timeout, saying so")
    func slowResolver() {
        let started = ContinuousClock.now
        #expect {
            try HostResolver.resolve("slow.example", timeout: .milliseconds(50)) { _ in
                usleep(2_000_000)
                return [IPAddress("192.0.2.1")!]
            }
        } throws: { error in
            "\(error)" == "cannot resolve slow.example: no answer within 0.05 seconds"
        }
        #expect(ContinuousClock.now - started < .seconds(2), "the caller did not wait for the resolver")
    }

    @Test("a resolver within the timeout answers; its failure is the caller's; a literal asks no one")
    func answers() throws {
        #expect(
            try HostResolver.resolve("quick.example", timeout: .seconds(5)) { _ in [IPAddress("192.0.2.7")!] } == [IPAddress("192.0.2.7")!])
        #expect(throws: HostResolver.Failure.self) {
            try HostResolver.resolve("gone.example", timeout: .seconds(5)) { host in
                throw HostResolver.Failure(host: host, reason: "NXDOMAIN")
            }
        }
        #expect(
            try HostResolver.resolve("192.0.2.9", timeout: .zero) { _ in
                Issue.record("asked"); return []
            } == [IPAddress("192.0.2.9")!])
    }

    @Test("the lookup runs on a thread named for it, not on one named after its caller's pool")
    func namedThread() throws {
        let name = Mutex<String?>(nil)
        _ = try DispatchQueue.global().sync {
            try HostResolver.resolve("named.example", timeout: .seconds(5)) { _ in
                name.withLock { $0 = currentThreadName() }
                return [IPAddress("192.0.2.3")!]
            }
        }
        #expect(name.withLock { $0 } == "reach-lookup")
    }

    @Test("a busy shared pool does not hold the lookup back: the timeout is the resolver's, not the queue's")
    func busyPool() throws {
        // Every thread the global pool will give, and more, spinning: the app's own CPU-bound work.
        let spinning = Atomic<Bool>(true)
        let spinners = 4 * sysconf(Int32(_SC_NPROCESSORS_ONLN))
        for _ in 0..<spinners {
            DispatchQueue.global().async { while spinning.load(ordering: .relaxed) {} }
        }
        defer { spinning.store(false, ordering: .relaxed) }
        usleep(200_000)
        #expect(
            try HostResolver.resolve("pool.example", timeout: .seconds(2)) { _ in [IPAddress("192.0.2.8")!] } == [IPAddress("192.0.2.8")!])
    }
}
