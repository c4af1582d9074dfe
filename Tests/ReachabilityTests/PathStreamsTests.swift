import ReachabilityCore
import Testing

/// The one fan-out of paths to streams, the monitor's and the client's alike: the latest
/// path held, and each consumer's first read marked `initial`.
@Suite struct PathStreamsTests {
    static func path(_ status: ReachabilityStatus) -> Path { Path(status: status) }

    /// Reads what the stream holds now, without waiting for more.
    static func held(_ stream: AsyncStream<Path>, _ continuation: AsyncStream<Path>.Continuation) async -> [Path] {
        continuation.finish()
        var read: [Path] = []
        for await path in stream { read.append(path) }
        return read
    }

    @Test("a stream that joins is handed the current path marked initial; the next is not")
    func joinsWithCurrent() async {
        var streams = PathStreams()
        let (stream, continuation) = AsyncStream.makeStream(of: Path.self, bufferingPolicy: .bufferingNewest(2))
        _ = streams.add(continuation, current: Self.path(.wired))
        for delivery in streams.deliveries() { delivery.send(Self.path(.wifi)) }
        let read = await Self.held(stream, continuation)
        #expect(read.map(\.status) == [.wired, .wifi])
        #expect(read.map(\.initial) == [true, false])
    }

    @Test("joined before any path: the first to come is marked initial")
    func joinsBeforeAnyPath() async {
        var streams = PathStreams()
        let (stream, continuation) = AsyncStream.makeStream(of: Path.self, bufferingPolicy: .bufferingNewest(2))
        _ = streams.add(continuation, current: nil)
        for delivery in streams.deliveries() { delivery.send(Self.path(.wired)) }
        for delivery in streams.deliveries() { delivery.send(Self.path(.unreachable)) }
        let read = await Self.held(stream, continuation)
        #expect(read.map(\.initial) == [true, false])
    }

    @Test("a consumer that has not read its first path gets the newer one marked initial in its place")
    func unreadFirstIsReplacedMarked() async {
        var streams = PathStreams()
        let (stream, continuation) = AsyncStream.makeStream(of: Path.self, bufferingPolicy: .bufferingNewest(1))
        _ = streams.add(continuation, current: Self.path(.wired))
        for status in [ReachabilityStatus.wifi, .unreachable] {
            for delivery in streams.deliveries() { delivery.send(Self.path(status)) }
        }
        let read = await Self.held(stream, continuation)
        #expect(read.map(\.status) == [.unreachable])
        #expect(read.first?.initial == true, "the consumer's first read is marked initial even though a newer path replaced it")
    }

    @Test("a restart (a client connected again) marks the next path initial for everyone; removed streams are sent nothing")
    func restartAndRemove() async {
        var streams = PathStreams()
        let (kept, keptContinuation) = AsyncStream.makeStream(of: Path.self, bufferingPolicy: .bufferingNewest(3))
        let (gone, goneContinuation) = AsyncStream.makeStream(of: Path.self, bufferingPolicy: .bufferingNewest(3))
        _ = streams.add(keptContinuation, current: Self.path(.wired))
        let goneID = streams.add(goneContinuation, current: Self.path(.wired))
        streams.remove(goneID)
        for delivery in streams.deliveries(restart: true) { delivery.send(Self.path(.wifi)) }
        #expect(await Self.held(kept, keptContinuation).map(\.initial) == [true, true])
        #expect(await Self.held(gone, goneContinuation).count == 1, "only what it was handed when it joined")
        #expect(streams.removeAll().count == 1 && streams.isEmpty)
    }
}
