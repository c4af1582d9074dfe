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
/// path's link next changes or comes back.
///
/// With no path, the last link's file stays followed and its URI known, so a path that
/// goes and comes back by the same link makes no system call here on its way to
/// subscribers (docs/development.md, "How a kernel change travels").
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
    /// The path's link (nil: no path).
    private var pathIndex: Int32?
    /// The link whose state file is followed: the path's, or the last one's.
    private var followedIndex: Int32?
    /// Whether inotify watches the followed file's directory (it may not exist yet).
    private var isWatched = false
    /// The URI networkd recorded for the followed link.
    private var recorded: String?

    init(loop: EventLoop, onChange: @escaping () -> Void) {
        self.loop = loop
        self.onChange = onChange
    }

    /// The URI networkd recorded for the path's link.
    var uri: String? { pathIndex != nil && pathIndex == followedIndex ? recorded : nil }

    /// Reads link state from `directory` (nil: not at all), at start and on reload.
    func configure(directory fresh: String?) throws {
        guard fresh != directory else { return }
        (loopWatch, watch, directory) = (nil, nil, nil)
        if let fresh {
            let created = try FileChangeWatch()
            loopWatch = try loop.onReadable(created.fileDescriptor.rawValue, of: created) { [unowned self] in
                guard created.drain() else { return }
                // The directory may have been made again (networkd restarted): watch it anew.
                followFile()
                if read(), pathIndex == followedIndex { onChange() }
            }
            (watch, directory) = (created, fresh)
        }
        (followedIndex, recorded) = (nil, nil)
        follow(pathIndex)
    }

    /// Follows link `index`'s state file (nil: no link).
    func follow(_ index: Int32?) {
        pathIndex = index
        guard let index, index != followedIndex || !isWatched else { return }
        followedIndex = index
        followFile()
        _ = read()
    }

    private func followFile() {
        guard let watch, let directory, let followedIndex else { return isWatched = false }
        isWatched = watch.follow(["\(directory)/\(followedIndex)"])
    }

    /// Re-reads the followed file; true when the URI changed.
    private func read() -> Bool {
        var fresh: String?
        if let directory, let followedIndex, let bytes = try? SmallFile.read("\(directory)/\(followedIndex)", limit: Self.sizeLimit) {
            fresh = Self.captivePortal(in: bytes)
        }
        guard fresh != recorded else { return false }
        recorded = fresh
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
