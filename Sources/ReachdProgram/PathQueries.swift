import DaemonDecisions
import IPAddresses
import ReachabilityBus
import ReachabilityCore
import SDBus
import SystemCalls

/// `Route()` and `WatchPath()` (docs/api.md): the path to a destination, once or
/// followed. Names are resolved off the loop under per-caller limits and posted
/// back through a mailbox; watched paths are evaluated after each batch of kernel
/// events and published to those who hold them. Lives on the loop thread.
final class PathQueries {
    /// A resolution's result, posted back to the loop.
    private enum Resolution: Sendable {
        case route(request: Int, addresses: [IPAddress])
        case watch(key: String, addresses: [IPAddress])
    }

    /// Name resolutions in flight, per caller and in all: each holds a thread
    /// while it waits for DNS, so no caller may queue them without bound.
    static let routesPerCaller = 4
    static let routesInFlight = 32

    /// How a host name's addresses are found (none when it does not resolve): the
    /// system's resolver, or a test's names. Called off the loop; it may take its time.
    typealias Resolve = @Sendable (_ name: String) -> [IPAddress]
    static let systemResolver: Resolve = { (try? HostResolver.resolve($0)) ?? [] }

    private let resolveName: Resolve
    private let object: ReachabilityObject
    private let engine: () -> PathEngine
    /// What the daemon says of an evaluated path beyond the kernel's view: trust and connectivity.
    private let judged: (Path) -> Path
    private let mailbox: Mailbox<Resolution>
    private var resolutions: EventLoop.Watch?
    /// Name resolutions in flight, by request.
    private var pending: [Int: (caller: String, done: ([IPAddress]) -> Void)] = [:]
    private var nextRequest = 0
    private var watches = PathWatches()

    init(
        loop: EventLoop, object: ReachabilityObject, engine: @escaping () -> PathEngine, judged: @escaping (Path) -> Path,
        resolve: @escaping Resolve
    ) throws {
        (self.object, self.engine, self.judged, resolveName) = (object, engine, judged, resolve)
        mailbox = try Mailbox()
        resolutions = try mailbox.deliver(on: loop) { [unowned self] posted in
            for resolution in posted { resolved(resolution) }
        }
        object.onPathWatches = { [unowned self] held in
            watches.keep(only: held)
            watchedAddressesChanged()
        }
    }

    /// What the engine must watch beside the default path (a route change to one of these is an event).
    var addresses: [IPAddress] { watches.addresses }

    private func watchedAddressesChanged() { engine().alsoWatched = watches.addresses }

    private func resolved(_ resolution: Resolution) {
        switch resolution {
        case let .route(request, addresses):
            pending.removeValue(forKey: request)?.done(addresses)
        case let .watch(key, addresses):
            guard watches[key] != nil else { return }
            watches.resolved(key, addresses: addresses)
            watchedAddressesChanged()
            refresh()
        }
    }

    /// `Route()`: the path to one destination, now.
    func route(to destination: String, caller: String, reply: @escaping (Result<String, BusMethodError>) -> Void) {
        resolve(destination, for: "Route()", caller: caller, failure: { reply(.failure($0)) }) { [unowned self] addresses in
            guard !addresses.isEmpty else {
                return reply(.failure(.init("io.reachd.Reachability1.Error.UnknownHost", "cannot resolve \(destination)")))
            }
            reply(.success(evaluate(.host(destination), addresses: addresses).jsonString()))
        }
    }

    /// What a `WatchPath()` (or `UnwatchPath()`) call names.
    static func watchRequest(destination: String, interfaceTypes: String) throws(BusMethodError) -> PathWatchRequest {
        do {
            return PathWatchRequest(destination: destination, interfaceTypes: try InterfaceType.parseList(interfaceTypes))
        } catch {
            throw .invalidArgs("\(error)")
        }
    }

    /// `WatchPath()`: the path to a destination (or the default path restricted to some
    /// interface types), answered now and then followed with PathChanged.
    func watchPath(
        destination: String, interfaceTypes: String, caller: String,
        reply: @escaping (Result<(key: String, document: String), BusMethodError>) -> Void
    ) {
        let request: PathWatchRequest
        do throws(BusMethodError) {
            request = try Self.watchRequest(destination: destination, interfaceTypes: interfaceTypes)
        } catch {
            return reply(.failure(error))
        }
        let key = request.key
        let answer = { [unowned self] in
            guard let path = watches.current(key, evaluate) else {
                return reply(.failure(.failed("the watch ended before it was answered")))
            }
            reply(.success((key, path.jsonString())))
        }
        if watches[key] != nil { return answer() }
        guard !watches.isFull else {
            return reply(.failure(.limitsExceeded("\(PathWatches.limit) paths are watched already")))
        }
        guard !destination.isEmpty else {
            watches.insert(request, addresses: [])
            return answer()
        }
        resolve(destination, for: "WatchPath()", caller: caller, failure: { reply(.failure($0)) }) { [unowned self] addresses in
            // A name that does not resolve is watched all the same: its path is `unknown` until it does.
            watches.insert(request, addresses: addresses)
            watchedAddressesChanged()
            answer()
        }
    }

    /// The addresses of an IP address or host name, resolved off the loop under the
    /// per-caller limits; `failure` when the argument is neither, or a limit is reached.
    private func resolve(
        _ destination: String, for method: String, caller: String, failure: (BusMethodError) -> Void,
        then done: @escaping ([IPAddress]) -> Void
    ) {
        if let literal = IPAddress(destination) { return done([literal]) }
        guard HostResolver.isHostName(destination) else {
            let shown = destination.utf8.count > 64 ? String(decoding: destination.utf8.prefix(64), as: UTF8.self) + "…" : destination
            return failure(
                .invalidArgs(
                    "\"\(shown)\" is neither an IP address nor a host name (at most 253 bytes of letters, digits, '-', '_' and dots)"))
        }
        if pending.count >= Self.routesInFlight {
            return failure(.limitsExceeded("\(Self.routesInFlight) Route() and WatchPath() lookups are resolving already; try again"))
        }
        if pending.values.count(where: { $0.caller == caller }) >= Self.routesPerCaller {
            return failure(
                .limitsExceeded(
                    "at most \(Self.routesPerCaller) \(method) lookups of one caller resolve at once (Route() and WatchPath() together)"))
        }
        nextRequest += 1
        let request = nextRequest
        pending[request] = (caller, done)
        let (mailbox, resolveName) = (mailbox, resolveName)
        DedicatedThread.detach(.lookup) { mailbox.post(.route(request: request, addresses: resolveName(destination))) }
    }

    /// A path this answers with: evaluated now, judged as the daemon judges every path it publishes.
    private func evaluate(
        _ target: ReachabilityMonitor.Target, addresses: [IPAddress],
        allowed: Set<InterfaceType> = Set(InterfaceType.allCases)
    ) -> Path {
        judged(MonitorLoop.evaluate(engine(), target: target, addresses: addresses, watch: false, allowed: allowed))
    }

    private func evaluate(_ watch: PathWatches.Watch) -> Path {
        let destination = watch.request.destination
        return evaluate(
            destination.isEmpty ? .defaultPath : .host(destination), addresses: watch.addresses,
            allowed: watch.request.interfaceTypes)
    }

    /// Publishes the watched paths that changed (PathChanged, to those who hold them).
    func refresh() {
        for (key, path) in watches.refresh(evaluate) { object.publishWatchedPath(key: key, document: path.jsonString()) }
    }

    /// The default path leaves another way: a new network, or a VPN's DNS, often
    /// answers with other addresses for the watched names. At most `routesInFlight`
    /// threads look them up, each its share in turn: 256 watched names
    /// (`PathWatches.limit`) are not 256 threads.
    func resolveAgain() {
        let (mailbox, resolveName) = (mailbox, resolveName)
        let named = watches.namedDestinations
        let threads = min(named.count, Self.routesInFlight)
        for first in 0..<threads {
            let share = stride(from: first, to: named.count, by: threads).map { named[$0] }
            DedicatedThread.detach(.lookup) {
                for (key, name) in share { mailbox.post(.watch(key: key, addresses: resolveName(name))) }
            }
        }
    }
}
