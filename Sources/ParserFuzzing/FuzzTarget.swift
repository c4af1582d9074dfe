import FoundationEssentials
import IPAddresses
import Netlink
import ReachabilityCore
import ServerTrust
import SystemCalls
import TOML
import TrustHelperMessages

/// Every parser of input reachd does not control, each reachable from bytes:
/// what the libFuzzer driver (`FuzzTesting/`) feeds, and what the test suite
/// replays the corpora through. A target may only return or trap; a trap
/// (index out of range, overflow, a broken round-trip) is the finding.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// The TOML reader (a config file's syntax).
    case toml
    /// The config schema: `[monitor]` and `[trust]` of a reachd.toml.
    case config
    /// A pin in every spelling; whatever parses must round-trip.
    case pin
    /// Certificate files: PEM, DER, PEM bundles.
    case certificates
    /// A datagram from an rtnetlink socket: events, dump answers, route lookups.
    case netlink
    /// What reachd reads from reachd-trust.
    case helperMessages = "helper-messages"
    /// An entry of the report outbox.
    case reportSpool = "report-spool"
    /// A resolv.conf (whoever can write it: resolvconf, DHCP hooks, NetworkManager, an admin).
    case resolvConf = "resolv-conf"
    /// A captive-portal API's answer (RFC 8908): whoever runs the network's portal.
    case capport
    /// A path or interface document as a client reads it (the daemon's, or whoever
    /// speaks for it): read as Foundation's `JSONDecoder` reads it, to the same value.
    case documents

    public func run(_ bytes: [UInt8]) {
        switch self {
        case .toml:
            guard let text = String(validating: bytes, as: UTF8.self) else { return }
            _ = try? TOML.parse(text)
        case .config:
            Self.config(bytes)
        case .pin:
            Self.pin(bytes)
        case .certificates:
            _ = try? CertificateLoader.certificates(in: bytes)
        case .netlink:
            // Router-advertisement options are read further when they are used: read them so here too.
            for case let .routerOption(option) in RtnetlinkDatagram.decode(bytes).messages { _ = (option.captivePortalURI, option.pref64) }
        case .helperMessages:
            let decoder = JSONDecoder()
            let data = Data(bytes)
            _ = try? decoder.decode(TrustConfigurationSummary.self, from: data)
            _ = try? decoder.decode(TrustRound.self, from: data)
            _ = try? decoder.decode(TrustDelivery.self, from: data)
            _ = try? decoder.decode(PinFailureReportHead.self, from: data)
        case .reportSpool:
            _ = try? ReportOutbox.Entry(reading: bytes)
        case .resolvConf:
            Self.resolvConf(bytes)
        case .capport:
            Self.capport(bytes)
        case .documents:
            Self.documents(bytes)
        }
    }

    /// The project's reader and `JSONDecoder` agree on every input: both refuse it, or both read the same
    /// value. Past the reader's depth they differ on purpose, and `JSONDecoder` can trap there: such
    /// inputs (told by their opening brackets) are read by the reader alone. JSON treats a NUL as any
    /// other control character, but `JSONDecoder` does not: it reads `[`, NUL, `]`, NUL, `]` as `[]`,
    /// and refuses a NUL in a string no type reads, where it lets U+001F be. So `JSONDecoder` is asked
    /// about the text with each NUL as U+001F.
    private static func documents(_ bytes: [UInt8]) {
        guard let text = String(validating: bytes, as: UTF8.self) else { return }
        let comparable = bytes.count { $0 == UInt8(ascii: "[") || $0 == UInt8(ascii: "{") } <= JSONReader.depthLimit
        let asked = Data(bytes.map { $0 == 0 ? 0x1F : $0 })
        func agree<T: Decodable & Equatable>(_ ours: T?, _ type: T.Type) {
            guard comparable else { return }
            let foundation = try? JSONDecoder().decode(type, from: asked)
            if ours != foundation {
                fatalError("the reader made \(String(describing: ours)) of what JSONDecoder made \(String(describing: foundation)) of")
            }
        }
        agree(try? Path(json: text), Path.self)
        agree(try? InterfaceChange(json: text), InterfaceChange.self)
        agree(try? InterfaceChange.decodeArray(text), [InterfaceChange].self)
    }

    /// A document that parses encodes as reachd-trust hands it to reachd, and parses back to itself.
    private static func capport(_ bytes: [UInt8]) {
        guard let document = try? CaptivePortalAPIDocument.parse(bytes) else { return }
        guard let encoded = try? JSONEncoder().encode(CaptivePortalAPIAnswer(document: document)),
            let answer = try? JSONDecoder().decode(CaptivePortalAPIAnswer.self, from: encoded), answer.document == document
        else {
            fatalError("\(document) does not survive the way to reachd")
        }
        if document.captive, document.userPortalURL == nil { fatalError("captive without a user-portal-url was kept") }
        if let seconds = document.secondsRemaining, seconds < 0 { fatalError("a negative count was kept") }
    }

    /// Every server parsed prints as an address that parses back to it.
    private static func resolvConf(_ bytes: [UInt8]) {
        guard let text = String(validating: bytes, as: UTF8.self) else { return }
        for server in DNSServers.parseResolvConf(text) {
            guard IPAddress(server.address.description) == server.address else {
                fatalError("\(server.address) does not parse back to itself")
            }
            if case let .name(name)? = server.link, name.isEmpty { fatalError("an empty zone was kept") }
        }
    }

    /// As reachd and reachd-trust read a config file (relative file names are
    /// looked up in a directory that does not exist, so nothing is read).
    private static func config(_ bytes: [UInt8]) {
        guard let text = String(validating: bytes, as: UTF8.self),
            let document = try? TOML.parse(text, file: "fuzz.toml")
        else { return }
        var root = TOMLTableReader(document, file: "fuzz.toml", name: "")
        if var monitor = try? root.table("monitor") { _ = try? MonitorOptions(reading: &monitor) }
        if var trust = try? root.table("trust") { _ = try? TrustConfiguration(reading: &trust, relativeTo: "/nonexistent/reachd-fuzz") }
    }

    /// A pin that parses prints as `sha256/…`, and every spelling of that parses back to it.
    private static func pin(_ bytes: [UInt8]) {
        guard let text = String(validating: bytes, as: UTF8.self), let pin = try? PublicKeyPin(parsing: text) else { return }
        let base64 = String(pin.description.dropFirst("sha256/".count))
        for spelling in [pin.description, "sha256//" + base64, "pin-sha256=\"\(base64)\"", base64] {
            guard (try? PublicKeyPin(parsing: spelling)) == pin else {
                fatalError("\(text) parsed, but \(spelling) did not parse back to it")
            }
        }
    }
}
