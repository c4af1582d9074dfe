/// io.reachd.Reachability1 as both ends name it (docs/api.md): the daemon serves and
/// introspects these declarations (`ReachabilityBus`), and `ReachabilityClient` calls
/// and subscribes by them, so neither spells a member the other does not know.
package enum ReachabilityContract {
    /// The bus name the daemon owns.
    package static let name = "io.reachd.Reachability1"
    package static let path = "/io/reachd/Reachability1"
    package static let interface = name

    /// A method: its name, its arguments' signature, its reply's.
    package struct Method: Sendable, Hashable {
        package let name: String
        package let arguments: String
        package let reply: String

        init(_ name: String, _ arguments: String, _ reply: String) { (self.name, self.arguments, self.reply) = (name, arguments, reply) }

        package static let describe = Method("Describe", "", "s")
        package static let route = Method("Route", "s", "s")
        package static let trustStatus = Method("TrustStatus", "", "s")
        package static let recheckTrust = Method("RecheckTrust", "", "")
        package static let reload = Method("Reload", "", "")
        package static let checkConnectivity = Method("CheckConnectivity", "", "s")
        package static let interfaces = Method("Interfaces", "", "s")
        package static let watchInterfaces = Method("WatchInterfaces", "", "s")
        package static let watchPath = Method("WatchPath", "ss", "s")
        package static let unwatchPath = Method("UnwatchPath", "ss", "")
        package static let unwatchInterfaces = Method("UnwatchInterfaces", "", "")
    }

    /// A signal: its name and its arguments' signature (every argument a string).
    package struct Signal: Sendable, Hashable {
        package let name: String
        package let signature: String

        init(_ name: String, _ signature: String) { (self.name, self.signature) = (name, signature) }

        /// How many string arguments it carries.
        package var arguments: Int { signature.count }

        package static let statusChanged = Signal("StatusChanged", "ss")
        package static let interfaceChanged = Signal("InterfaceChanged", "ss")
        package static let trustChanged = Signal("TrustChanged", "ss")
        package static let pinFailure = Signal("PinFailure", "s")
        package static let pathChanged = Signal("PathChanged", "ss")

        package static let all: [Signal] = [.statusChanged, .interfaceChanged, .trustChanged, .pinFailure, .pathChanged]
    }
}
