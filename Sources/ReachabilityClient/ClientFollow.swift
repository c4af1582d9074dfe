import FoundationEssentials
import ReachabilityContract
import SDBus

extension ReachabilityClient {
    /// A call of one of the daemon's methods, with its arguments.
    struct Request: Equatable {
        let method: ReachabilityContract.Method
        var arguments: [String] = []
    }

    /// What one stream follows on the client's connection: a signal of the daemon's,
    /// the method that reads the state the signal changes, and what to do with both.
    /// Everything but the constants is the connection thread's.
    final class Follow: @unchecked Sendable {
        let signal: ReachabilityContract.Signal
        /// What reads the state the signal changes; nil for events (`PinFailure`).
        let read: Request?
        /// What lets go of a watch the daemon holds for the connection, once no stream follows it.
        let unwatch: Request?
        private let answer: (String) throws(Failure) -> Void
        private let signalled: (String, String) -> Void

        var match: BusConnection.SignalMatch?
        /// The serial of the read's answer: signals numbered before it are older.
        private var answeredSerial: UInt64 = 0
        private var needsRead = false
        private var inRead = false
        private(set) var retryAt: ContinuousClock.Instant?
        private var retryDelay: Duration?

        init(
            _ signal: ReachabilityContract.Signal, read: Request?, unwatch: Request? = nil,
            answer: @escaping (String) throws(Failure) -> Void, signalled: @escaping (String, String) -> Void
        ) {
            self.signal = signal
            self.read = read
            self.unwatch = unwatch
            self.answer = answer
            self.signalled = signalled
        }

        /// The state must be read again; signals numbered up to `serial` are skipped meanwhile.
        func mustRead(after serial: UInt64) {
            answeredSerial = serial
            needsRead = read != nil
            inRead = false
            (retryAt, retryDelay) = (nil, nil)
        }

        func isDue(at now: ContinuousClock.Instant) -> Bool { needsRead && !inRead && retryAt.map { $0 <= now } ?? true }

        func reading() { inRead = true }

        /// The daemon refused the read: asked again after a back-off.
        func refused(delays: (first: Duration, last: Duration)) {
            inRead = false
            let delay = retryDelay.map { min($0 * 2, delays.last) } ?? delays.first
            (retryAt, retryDelay) = (.now + delay, delay)
        }

        func answered(_ document: String, serial: UInt64) throws(Failure) {
            (needsRead, inRead, retryAt, retryDelay) = (false, false, nil, nil)
            answeredSerial = serial
            try answer(document)
        }

        func signalled(_ first: String, _ second: String, serial: UInt64) {
            guard serial > answeredSerial else { return }
            signalled(first, second)
        }
    }

    // MARK: What each stream follows

    /// StatusChanged: the path, for every `paths` and `onChange` subscriber. Nothing is delivered twice.
    func pathFollow() -> Follow {
        var last: Path?
        let offer = { [self] (path: Path) in
            if let last, last.isSamePath(as: path) { return }
            let initial = last == nil
            last = path
            deliver(path, initial: initial)
        }
        return Follow(
            .statusChanged, read: .init(method: .describe), answer: { document throws(Failure) in offer(try Self.decode(document)) },
            signalled: { _, document in (try? Self.decode(document)).map(offer) })
    }

    /// StatusChanged as the daemon wrote it, for `reachctl watch --json`: each document whose path
    /// differs from the last, the first marked initial. A newer daemon's fields pass through.
    ///
    /// A signal's document is not decoded: its text says whether its path is the last one's.
    /// Signals older than the last answer are skipped, so it comes from the daemon that
    /// wrote the answer, and one daemon writes a path one way (`Path.jsonString()`): the same
    /// path is the same text but for `initial` and `since` (`Path.sameDocumentPath`). Decoding it, only to compare, was
    /// most of what the client did between the signal and the line (BENCHMARKS.md §35). An
    /// answer is decoded, and compared with the last document decoded, as a path: it may come
    /// from another daemon than the last document, after a restart.
    static func documentFollow(_ continuation: AsyncStream<String>.Continuation) -> Follow {
        // The last document passed on, or the last answer, which has the same path: what a
        // signal's text is compared with.
        var last: String?
        let pass = { (document: String) in
            // The path's own "initial" is the one followed by "since" (Path.jsonString()).
            let marked =
                last == nil
                ? document.replacing("\"initial\":false,\"since\":", with: "\"initial\":true,\"since\":", maxReplacements: 1) : document
            last = document
            continuation.yield(marked)
        }
        // Whether `path` is the last document's, read as a path (the last document may have come from another daemon).
        let isLast = { (path: Path) in last.flatMap { try? decode($0) }?.isSamePath(as: path) == true }
        return Follow(
            .statusChanged, read: .init(method: .describe),
            answer: { document throws(Failure) in
                if isLast(try decode(document)) { last = document } else { pass(document) }
            },
            signalled: { _, document in
                if let before = last, let same = Path.sameDocumentPath(before, document) {
                    if !same { pass(document) }
                } else if let path = try? decode(document), !isLast(path) {
                    // Written some other way (no `"initial":…,"since":"…"` where the daemon puts them): read as a path.
                    pass(document)
                }
            })
    }

    /// PathChanged of one `WatchPath()` watch, for one `paths(to:interfaceTypes:)` stream.
    static func watchFollow(_ request: PathWatchRequest, _ continuation: AsyncStream<Path>.Continuation) -> Follow {
        var last: Path?
        let offer = { (path: Path) in
            if let last, last.isSamePath(as: path) { return }
            PathStreams.Delivery(continuation: continuation, first: last == nil).send(path)
            last = path
        }
        let watch = Request(method: .watchPath, arguments: [request.destination, request.interfaceTypesText])
        return Follow(
            .pathChanged, read: watch, unwatch: .init(method: .unwatchPath, arguments: watch.arguments),
            answer: { document throws(Failure) in offer(try decode(document)) },
            signalled: { key, document in
                guard key == request.key else { return }
                (try? decode(document)).map(offer)
            })
    }

    /// TrustChanged, for one `trustChanges` stream.
    static func trustFollow(_ continuation: AsyncStream<TrustStatus>.Continuation) -> Follow {
        var last: TrustStatus?
        let offer = { (status: TrustStatus) in
            guard status != last else { return }
            last = status
            continuation.yield(status)
        }
        return Follow(
            .trustChanged, read: .init(method: .trustStatus), answer: { document throws(Failure) in offer(try decodeTrust(document)) },
            signalled: { _, document in (try? decodeTrust(document)).map(offer) })
    }

    /// PinFailure, for one `pinFailures` stream: events, nothing to read first.
    static func pinFailureFollow(_ continuation: AsyncStream<PinFailure>.Continuation) -> Follow {
        Follow(
            .pinFailure, read: nil, answer: { _ in },
            signalled: { report, _ in (try? PinFailure(json: report)).map { _ = continuation.yield($0) } })
    }

    /// InterfaceChanged, for one `interfaceChanges` stream: the inventory from
    /// WatchInterfaces, then each change newer than it. After a reconnection the
    /// inventory is compared with what was delivered: what changed meanwhile is
    /// delivered, and what vanished as removed.
    static func interfaceFollow(_ buffer: InterfaceChangeStream.Buffer) -> Follow {
        var known: [Int: InterfaceChange] = [:]
        var deliveredInventory = false
        let deliver = { (entry: InterfaceChange) in
            if entry.removed { known[entry.index] = nil } else { known[entry.index] = entry }
            buffer.put(entry)
        }
        return Follow(
            .interfaceChanged, read: .init(method: .watchInterfaces), unwatch: .init(method: .unwatchInterfaces),
            answer: { inventory throws(Failure) in
                let entries = try decodeInterfaces(inventory)
                let initial = !deliveredInventory
                deliveredInventory = true
                var vanished = known
                for var entry in entries {
                    vanished[entry.index] = nil
                    entry.initial = initial
                    if initial || known[entry.index].map({ $0.interface != entry.interface || $0.master != entry.master }) ?? true {
                        deliver(entry)
                    }
                }
                for var gone in vanished.values {
                    gone.removed = true
                    gone.available = false
                    deliver(gone)
                }
            }, signalled: { _, document in (try? InterfaceChange(json: document)).map(deliver) })
    }
}
