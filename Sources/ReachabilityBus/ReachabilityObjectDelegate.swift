#if canImport(Glibc)
import SDBus
import Glibc
#endif

/// What the D-Bus object answers with. Implemented by the daemon; called on the loop thread.
package protocol ReachabilityObjectDelegate: AnyObject {
    /// The path document.
    func describe() -> String
    /// The path to one destination, as `reachctl route --json` prints it. May
    /// answer later (name resolution must not block the loop): call `reply` once,
    /// on the loop thread. `caller` tells callers apart (a bus name, or one peer).
    func route(to destination: String, caller: String, reply: @escaping (Result<String, BusMethodError>) -> Void)
    func trustStatus() -> String
    /// `caller`: the caller's user (nil when the bus does not say), for per-user limits.
    func recheckTrust(caller: uid_t?) throws(BusMethodError)
    /// Re-reads the config (the caller is root); `reply` once it is in force or refused, on the loop thread.
    func reload(reply: @escaping (Result<String, BusMethodError>) -> Void)
    /// Probes connectivity now and answers with the state (later: the probe must not block the loop).
    func checkConnectivity(caller: uid_t?, reply: @escaping (Result<String, BusMethodError>) -> Void)
    /// Every interface, as a JSON array (docs/api.md, `Interfaces()`).
    func interfaces() -> String
    /// Starts (or joins) a watch of the path to `destination` ("" for the default path)
    /// leaving by `interfaceTypes` (a comma-separated list, "" for all): `reply` once, on
    /// the loop thread, with the watch's key (`PathChanged`'s first argument) and its document.
    func watchPath(
        destination: String, interfaceTypes: String, caller: String,
        reply: @escaping (Result<(key: String, document: String), BusMethodError>) -> Void)
    /// The key of the watch a `WatchPath(destination, interfaceTypes)` call names (`PathChanged`'s
    /// first argument); `InvalidArgs` for a bad interface-type list.
    func pathWatchKey(destination: String, interfaceTypes: String) throws(BusMethodError) -> String
}
