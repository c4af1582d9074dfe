import CSystemd
import CSystemdShim
import IPAddresses
import ReachabilityContract
import SDBus

#if canImport(Glibc)
import Glibc
#endif

/// io.reachd.Reachability1 (docs/api.md), declared once: its properties, methods and
/// signals. sd-bus serves and introspects what is declared here; the methods ask the
/// object's delegate (the daemon).
extension ReachabilityObject {
    /// The property values of the published path, in the order of docs/api.md.
    package struct Properties: Equatable, Sendable {
        package var status = "unknown"
        package var reason = ""
        package var interface = ""
        package var interfaceKind = ""
        package var expensive = false
        package var ipv4 = false
        package var ipv6 = false
        package var vpn = ""
        package var trust = "none"
        package var connectivity = "unknown"
        package var portalURL = ""
        package var supportsDNS = false
        package var dnsServers: [String] = []
        /// The network's captive-portal API (RFC 8908): "" when none is known.
        package var captivePortalAPI = ""
        /// router-advertisement, networkd or config; "" without an API.
        package var captivePortalSource = ""
        /// captive, not-captive, unknown (no usable answer yet); "" without an API.
        package var captivePortalStatus = ""
        package var venueInfoURL = ""
        /// Seconds since 1970 when the session ends; 0: not counted.
        package var sessionExpires: UInt64 = 0
        /// -1: not counted.
        package var bytesRemaining: Int64 = -1
        package var canExtendSession = false
        /// native, clat, nat64 or none.
        package var ipv4Via = "none"
        /// The CLAT's interface; "" without one.
        package var clat = ""
        /// "64:ff9b::/96"; "" when no NAT64 is known.
        package var nat64Prefix = ""
        /// config, router-advertisement or dns64; "" without a prefix.
        package var nat64Source = ""
        /// Another interface whose own verdict beats the path's connectivity; "" when none does.
        package var betterWayOut = ""

        package init() {}

        /// Each property's name, D-Bus type and value.
        static let table: PropertyTable<Properties> = [
            ("Status", "s", { .string($0.status) }),
            ("Reason", "s", { .string($0.reason) }),
            ("Interface", "s", { .string($0.interface) }),
            ("InterfaceKind", "s", { .string($0.interfaceKind) }),
            ("Expensive", "b", { .boolean($0.expensive) }),
            ("IPv4", "b", { .boolean($0.ipv4) }),
            ("IPv6", "b", { .boolean($0.ipv6) }),
            ("VPN", "s", { .string($0.vpn) }),
            ("Trust", "s", { .string($0.trust) }),
            ("Connectivity", "s", { .string($0.connectivity) }),
            ("PortalURL", "s", { .string($0.portalURL) }),
            ("SupportsDNS", "b", { .boolean($0.supportsDNS) }),
            ("DNSServers", "as", { .strings($0.dnsServers) }),
            ("CaptivePortalAPI", "s", { .string($0.captivePortalAPI) }),
            ("CaptivePortalSource", "s", { .string($0.captivePortalSource) }),
            ("CaptivePortalStatus", "s", { .string($0.captivePortalStatus) }),
            ("VenueInfoURL", "s", { .string($0.venueInfoURL) }),
            ("SessionExpires", "t", { .u64($0.sessionExpires) }),
            ("BytesRemaining", "x", { .i64($0.bytesRemaining) }),
            ("CanExtendSession", "b", { .boolean($0.canExtendSession) }),
            ("IPv4Via", "s", { .string($0.ipv4Via) }),
            ("CLAT", "s", { .string($0.clat) }),
            ("NAT64Prefix", "s", { .string($0.nat64Prefix) }),
            ("NAT64Source", "s", { .string($0.nat64Source) }),
            ("BetterWayOut", "s", { .string($0.betterWayOut) })
        ]

        static let names = table.map(\.name)

        /// Each property's value, in the table's order.
        var values: [BusValue] { Self.table.map { $0.value(self) } }
    }

    static let interface = BusInterface<ReachabilityObject>(
        ReachabilityContract.interface,
        properties: Properties.table.map { property in
            .init(property.name, property.signature) { object in property.value(object.properties) }
        },
        methods: [
            .init(.describe) { object, call in object.answer(call) { $0.describe() } },
            .init(.route) { object, call in
                guard let destination = call.string() else { return -EINVAL }
                guard let delegate = object.delegate else { return -ESHUTDOWN }
                delegate.route(to: destination, caller: object.caller(of: call), reply: call.later())
                return 1
            },
            .init(.trustStatus) { object, call in object.answer(call) { $0.trustStatus() } },
            .init(.recheckTrust) { object, call in
                guard let delegate = object.delegate else { return -ESHUTDOWN }
                do throws(BusMethodError) {
                    try delegate.recheckTrust(caller: call.senderUID)
                    return call.replyEmpty()
                } catch {
                    return call.fail(error)
                }
            },
            .init(.reload) { object, call in
                let uid = call.senderUID
                guard uid == 0 else {
                    return call.fail(.accessDenied(uid == nil ? "the caller's credentials are unknown" : "Reload is for root only"))
                }
                guard let delegate = object.delegate else { return -ESHUTDOWN }
                delegate.reload(reply: call.later(empty: true))
                return 1
            },
            .init(.checkConnectivity) { object, call in
                guard let delegate = object.delegate else { return -ESHUTDOWN }
                delegate.checkConnectivity(caller: call.senderUID, reply: call.later())
                return 1
            },
            .init(.interfaces) { object, call in object.answer(call) { $0.interfaces() } },
            .init(.watchInterfaces) { object, call in
                object.subscriber(on: call.bus)?.setWatchesInterfaces(true, by: call.sender)
                // Signals sent after this reply are newer than the inventory it carries.
                let answer = object.answer(call) { $0.interfaces() }
                object.interfaceWatchersChanged()
                return answer
            },
            .init(.watchPath) { object, call in
                guard let (destination, types) = call.strings() else { return -EINVAL }
                guard let delegate = object.delegate else { return -ESHUTDOWN }
                let watcher = call.sender ?? ""
                let bus = call.bus
                let reply = call.later()
                // Asking again for a watch it holds is no new watch.
                if let subscriber = object.subscriber(on: bus), subscriber.pathWatchCount(of: watcher) >= pathWatchesPerClient,
                    let key = try? delegate.pathWatchKey(destination: destination, interfaceTypes: types),
                    subscriber.pathWatchers[key]?.contains(watcher) != true
                {
                    reply(.failure(.limitsExceeded("at most \(pathWatchesPerClient) WatchPath() watches per connection")))
                    return 1
                }
                delegate.watchPath(destination: destination, interfaceTypes: types, caller: object.caller(of: call)) {
                    [weak object] result in
                    // Registered before the reply: every PathChanged numbered after it is newer than its document.
                    if case let .success(watch) = result, let object, let subscriber = object.subscriber(on: bus) {
                        subscriber.pathWatchers[watch.key, default: []].insert(watcher)
                        object.pathWatchesChanged()
                    }
                    reply(result.map(\.document))
                }
                return 1
            },
            .init(.unwatchPath) { object, call in
                guard let (destination, types) = call.strings() else { return -EINVAL }
                guard let delegate = object.delegate else { return -ESHUTDOWN }
                let key: String
                do throws(BusMethodError) {
                    key = try delegate.pathWatchKey(destination: destination, interfaceTypes: types)
                } catch {
                    return call.fail(error)
                }
                if object.subscriber(on: call.bus)?.letGo(key, by: call.sender ?? "") == true { object.pathWatchesChanged() }
                return call.replyEmpty()
            },
            .init(.unwatchInterfaces) { object, call in
                object.subscriber(on: call.bus)?.setWatchesInterfaces(false, by: call.sender)
                object.interfaceWatchersChanged()
                return call.replyEmpty()
            }
        ],
        signals: ReachabilityContract.Signal.all.map(BusInterface.Signal.init))

    /// Answers now with what the delegate says.
    private func answer(_ call: BusCall, _ body: (any ReachabilityObjectDelegate) -> String) -> Int32 {
        guard let delegate else { return -ESHUTDOWN }
        return call.reply(body(delegate))
    }
}

extension BusInterface.Method {
    /// A method the contract declares, answered by `call`.
    init(_ method: ReachabilityContract.Method, call: @escaping @Sendable (Object, BusCall) -> Int32) {
        self.init(method.name, method.arguments, method.reply, call: call)
    }
}

extension BusInterface.Signal {
    init(_ signal: ReachabilityContract.Signal) { self.init(signal.name, signal.signature) }
}
