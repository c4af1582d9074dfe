import SDBus
import SystemCalls
import TOML

/// systemd-networkd's word on the captive portal of the path's link: the
/// `CAPTIVE_PORTAL=` line of its link state file (`/run/systemd/netif/links/IFINDEX`,
/// networkd ≥ 254: from DHCPv4 option 114, DHCPv6 option 103 or RA option 37 of a
/// link networkd manages — it turns the kernel's own RA processing off there).
/// Only the path's link is followed (inotify on that one name), so the state files
/// of a container host's other links cost nothing. networkd replaces the file by
/// rename; one that appears later (networkd started after reachd) is seen when the
/// path's link next changes.
final class NetworkdCaptivePortal {
    /// Where networkd writes its link state.
    static let defaultDirectory = "/run/systemd/netif/links"
    /// A link state file is a few hundred bytes; one larger than this is not networkd's.
    static let sizeLimit = 64 * 1024

    private let loop: EventLoop
    private let onChange: () -> Void
    private var watch: FileChangeWatch?
    private var loopWatch: EventLoop.Watch?
    private var directory: String?
    private var interfaceIndex: Int32?
    /// The URI networkd recorded for the followed link.
    private(set) var uri: String?

    init(loop: EventLoop, onChange: @escaping () -> Void) {
        self.loop = loop
        self.onChange = onChange
    }

    /// Reads link state from `directory` (nil: not at all), at start and on reload.
    func configure(directory fresh: String?) throws {
        guard fresh != directory else { return }
        (loopWatch, watch, directory) = (nil, nil, nil)
        if let fresh {
            let created = try FileChangeWatch()
            loopWatch = try loop.onReadable(created.fileDescriptor.rawValue, of: created) { [unowned self] in
                guard created.drain() else { return }
                // The directory may have been made again (networkd restarted): watch it anew.
                if let directory, let interfaceIndex { created.follow(["\(directory)/\(interfaceIndex)"]) }
                if read() { onChange() }
            }
            (watch, directory) = (created, fresh)
        }
        let followed = interfaceIndex
        interfaceIndex = nil
        follow(followed)
    }

    /// Follows link `index`'s state file (nil: no link). With no link the last one's
    /// name stays watched: its directory's watch is kept for the next link, so a path
    /// that goes and comes back makes no inotify call on its way to subscribers
    /// (`FileChangeWatch.follow`), and what is read then is nothing.
    func follow(_ index: Int32?) {
        guard index != interfaceIndex else { return }
        interfaceIndex = index
        if let index, let directory { watch?.follow(["\(directory)/\(index)"]) }
        _ = read()
    }

    /// Re-reads the followed file; true when the URI changed.
    private func read() -> Bool {
        var fresh: String?
        if let directory, let interfaceIndex, let bytes = try? SmallFile.read("\(directory)/\(interfaceIndex)", limit: Self.sizeLimit) {
            fresh = Self.captivePortal(in: bytes)
        }
        guard fresh != uri else { return false }
        uri = fresh
        return true
    }

    /// The value of the `CAPTIVE_PORTAL=` line, as networkd writes it (unquoted, one line).
    static func captivePortal(in bytes: [UInt8]) -> String? {
        let key = Array("CAPTIVE_PORTAL=".utf8)
        for line in bytes.split(separator: UInt8(ascii: "\n")) where line.starts(with: key) {
            let value = line.dropFirst(key.count)
            return value.isEmpty ? nil : String(decoding: value, as: UTF8.self)
        }
        return nil
    }
}
