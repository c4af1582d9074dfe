@_exported import TrustVocabulary

/// What the path is, as docs/path.md names it.
public enum ReachabilityStatus: String, Codable, Sendable, CaseIterable {
    /// Not known yet (before the first dump), or no longer known (an unrecovered error).
    case unknown
    /// No usable path; `Path.reason` says why.
    case unreachable
    /// Reachable over a wireless LAN.
    case wifi
    /// Reachable over a wired (or virtual wired) link.
    case wired
    /// Reachable over a cellular modem: expensive by default.
    case cellular

    /// Any of `wifi`, `wired`, `cellular`.
    public var isReachable: Bool { self == .wifi || self == .wired || self == .cellular }
}

/// Why there is no usable path.
public enum UnreachableReason: String, Codable, Sendable, CaseIterable {
    /// No interface that could carry the path exists (loopback and ignored ones do not count).
    case noInterface = "no-interface"
    /// The interfaces are administratively down.
    case linkDown = "link-down"
    /// The interface is up but has no carrier (cable out, not associated, tun without its process).
    case noCarrier = "no-carrier"
    /// The interface has carrier but no usable address (none, tentative, or link-local only).
    case noAddress = "no-address"
    /// The kernel has no route (or an `unreachable`/`prohibit` route) to the probe.
    case noRoute = "no-route"
    /// A `blackhole` route swallows the probe.
    case blackhole

    /// Lower ranks explain more: a blackhole is a deliberate choice; an interface-level
    /// reason says more than a missing route.
    var rank: Int {
        switch self {
        case .blackhole: 0
        case .noCarrier: 1
        case .linkDown: 2
        case .noAddress: 3
        case .noInterface: 4
        case .noRoute: 5
        }
    }
}

/// Whether the path reaches the Internet (docs/connectivity.md), in
/// NetworkManager's and GLib's vocabulary.
public enum Connectivity: String, Codable, Sendable, CaseIterable {
    /// No evidence: no probe configured and no trust host validated on this path yet,
    /// or the first probe on it has not answered.
    case unknown
    /// No usable path.
    case none
    /// The probe is answered, but not as configured: a redirect, another status, another body.
    case portal
    /// A path, but the probe gets no answer: timeout, refused, name resolution failed.
    case limited
    /// The probe answers as configured (or, without a probe, a trust host validated).
    case full

    /// Of two families' answers the document gives the best: a portal on one says
    /// more than silence on the other, and one family answering is full.
    var rank: Int {
        switch self {
        case .unknown: 0
        case .none: 1
        case .limited: 2
        case .portal: 3
        case .full: 4
        }
    }
}

/// Where a path document was computed.
public enum PathSource: String, Codable, Sendable {
    /// By the reachd daemon.
    case daemon
    /// In this process, from netlink.
    case direct
}
