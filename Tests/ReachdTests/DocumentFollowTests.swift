import Foundation
import ReachabilityCore
import Testing

/// `reachctl watch --json` passes the daemon's documents on without decoding a signal's:
/// whether its path is the last one's is read from the text (`Path.sameDocumentPath`), which must
/// say what `Path.isSamePath(as:)` says of any two documents one daemon wrote.
@Suite("a signal's document compared as text says what isSamePath says")
struct DocumentFollowTests {
    /// Paths that differ in one way each, and in `since` and `initial`, which the comparison leaves out.
    static var paths: [Path] {
        let eth0 = Path.Interface(name: "eth0", index: 2, kind: .ethernet)
        // A name with what the comparison looks for, escaped inside a string.
        let odd = Path.Interface(name: "\"initial\":true,\"since\":\"", index: 3, kind: .ethernet)
        let wired = Path(status: .wired, interface: eth0, gateway: "10.1.0.1", ipv4: true, source: .daemon)
        var variants = [Path.unknown(source: .daemon), Path(status: .unreachable, reason: .noRoute, source: .daemon), wired]
        var other = wired
        other.gateway = "10.1.0.254"
        variants.append(other)
        other = wired
        other.interface = odd
        variants.append(other)
        other = wired
        other.connectivity = .full
        variants.append(other)
        other = wired
        other.interfaces = [
            Path.InterfaceState(
                name: "eth0", index: 2, kind: .ethernet, operstate: "up", up: true, carrier: true, addresses: ["10.1.0.2/24"])
        ]
        variants.append(other)
        return variants.flatMap { path in
            [(false, 0.0), (true, 0.0), (false, 3_600.5)].map { initial, later in
                var copy = path
                copy.initial = initial
                copy.since = Date(timeIntervalSince1970: 1_800_000_000 + later)
                return copy
            }
        }
    }

    @Test("every pair of documents: the same path exactly when isSamePath says so")
    func agreesWithIsSamePath() {
        let paths = Self.paths
        for one in paths {
            for other in paths {
                let same = Path.sameDocumentPath(one.jsonString(), other.jsonString())
                #expect(same == one.isSamePath(as: other), "\(one.jsonString()) and \(other.jsonString())")
            }
        }
    }

    @Test("a document written some other way is not compared as text")
    func otherWritersAreDecoded() {
        let document = Path(status: .wired).jsonString()
        let reordered = document.replacing("\"initial\":false,", with: "").replacing("}", with: ",\"initial\":false}")
        #expect(Path.sameDocumentPath(document, reordered) == nil)
        #expect(Path.sameDocumentPath(reordered, document) == nil)
    }
}
