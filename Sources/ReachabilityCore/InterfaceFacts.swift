#if canImport(Glibc)
import Glibc
#endif

/// What the device model says about an Ethernet-typed interface: the only facts
/// classification takes from outside netlink. Wi-Fi and WWAN hardware cannot
/// exist in CI, so this is the seam tests feed with real facts.
public struct InterfaceFacts: Sendable, Equatable {
    /// `DEVTYPE=` from uevent: "wlan", "wwan", "bridge", "gadget", …
    public var deviceType: String?
    /// A `phy80211` link or a `wireless` directory exists.
    public var isWireless: Bool
    /// The kernel driver bound to the device: "iwlwifi", "qmi_wwan", "ipheth", …
    public var driver: String?

    /// Facts as sysfs would give them; what is unknown stays nil or false.
    public init(deviceType: String? = nil, isWireless: Bool = false, driver: String? = nil) {
        self.deviceType = deviceType
        self.isWireless = isWireless
        self.driver = driver
    }
}

/// Where interface facts come from.
package protocol InterfaceFactsSource: Sendable {
    func facts(forInterfaceNamed name: String) -> InterfaceFacts
}

/// Reads facts from sysfs (`/sys/class/net/IF/…`), or from a copy of it.
///
/// sysfs shows the network namespace of whoever mounted it, not the thread's:
/// a monitor opened in another namespace through `setns` must not use it
/// (`ip netns exec` mounts a fresh sysfs, so there it is right).
package struct SysfsInterfaceFacts: InterfaceFactsSource {
    package let root: String

    package init(root: String = "/sys/class/net") { self.root = root }

    package func facts(forInterfaceNamed name: String) -> InterfaceFacts {
        // A name from the kernel never holds "/", but never build a path from one that does.
        guard !name.contains("/"), name != ".", name != ".." else { return InterfaceFacts() }
        let directory = "\(root)/\(name)"
        var facts = InterfaceFacts()
        if let uevent = readSmallFile("\(directory)/uevent") {
            for line in uevent.split(separator: "\n") where line.hasPrefix("DEVTYPE=") {
                facts.deviceType = String(line.dropFirst("DEVTYPE=".count))
            }
        }
        facts.isWireless = exists("\(directory)/phy80211") || exists("\(directory)/wireless")
        facts.driver = lastComponentOfLink("\(directory)/device/driver")
        return facts
    }
}

/// No facts: for namespaces whose sysfs we cannot see.
package struct NoInterfaceFacts: InterfaceFactsSource {
    package init() {}
    package func facts(forInterfaceNamed name: String) -> InterfaceFacts { InterfaceFacts() }
}

/// Facts from a table: tests, and callers that know better.
package struct FixedInterfaceFacts: InterfaceFactsSource {
    package let table: [String: InterfaceFacts]
    package init(_ table: [String: InterfaceFacts]) { self.table = table }
    package func facts(forInterfaceNamed name: String) -> InterfaceFacts { table[name] ?? InterfaceFacts() }
}

/// The entry itself, not what a link points at.
private func exists(_ path: String) -> Bool {
    var status = stat()
    return lstat(path, &status) == 0
}

private func readSmallFile(_ path: String) -> String? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = read(descriptor, &buffer, buffer.count)
    guard count > 0 else { return nil }
    return String(decoding: buffer.prefix(count), as: UTF8.self)
}

private func lastComponentOfLink(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = readlink(path, &buffer, buffer.count - 1)
    guard count > 0 else { return nil }
    let target = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return target.split(separator: "/").last.map(String.init)
}
