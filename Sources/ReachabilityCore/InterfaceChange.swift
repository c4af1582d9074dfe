import FoundationEssentials

/// One interface as the inventory lists it, or as it changed: what D-Bus
/// `Interfaces()` returns (one per interface), each `InterfaceChanged` signal
/// carries, and `reachctl watch --interfaces` prints (docs/api.md).
///
/// The path document lists only the interfaces that could carry a path
/// (``Path/interfaces``); this is for everything else: bridge ports, pod veths,
/// interfaces that are down. Subscribers of it receive the interface that
/// changed, never the inventory again.
public struct InterfaceChange: Codable, Sendable, Equatable {
    /// The interface's state after the change (for a removed one, as it was last seen).
    public var interface: Path.InterfaceState
    /// The bridge or bond it is a port of, by name; nil when it is none's.
    public var master: String?
    /// Whether it could carry a path of its own, and so is listed in the path document.
    public var available: Bool
    /// The interface is gone.
    public var removed: Bool
    /// Part of the inventory a subscriber receives first, not a change.
    public var initial: Bool

    /// An interface's entry.
    public init(interface: Path.InterfaceState, master: String? = nil, available: Bool, removed: Bool = false, initial: Bool = false) {
        self.interface = interface
        self.master = master
        self.available = available
        self.removed = removed
        self.initial = initial
    }

    /// The kernel's interface index: what tells one interface from another.
    public var index: Int { interface.index }

    enum CodingKeys: String, CodingKey {
        case name, index, kind, operstate, up, carrier, addresses, master, available, removed, initial
    }

    /// Reads the flat JSON object of docs/api.md.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        interface = Path.InterfaceState(
            name: try container.decode(String.self, forKey: .name), index: try container.decode(Int.self, forKey: .index),
            kind: try container.decode(InterfaceKind.self, forKey: .kind),
            operstate: try container.decode(String.self, forKey: .operstate), up: try container.decode(Bool.self, forKey: .up),
            carrier: try container.decode(Bool.self, forKey: .carrier), addresses: try container.decode([String].self, forKey: .addresses))
        master = try container.decodeIfPresent(String.self, forKey: .master)
        available = try container.decodeIfPresent(Bool.self, forKey: .available) ?? false
        removed = try container.decodeIfPresent(Bool.self, forKey: .removed) ?? false
        initial = try container.decodeIfPresent(Bool.self, forKey: .initial) ?? false
    }

    /// Writes the flat JSON object of docs/api.md, every key present.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(interface.name, forKey: .name)
        try container.encode(interface.index, forKey: .index)
        try container.encode(interface.kind, forKey: .kind)
        try container.encode(interface.operstate, forKey: .operstate)
        try container.encode(interface.up, forKey: .up)
        try container.encode(interface.carrier, forKey: .carrier)
        try container.encode(interface.addresses, forKey: .addresses)
        try container.encode(master, forKey: .master)
        try container.encode(available, forKey: .available)
        try container.encode(removed, forKey: .removed)
        try container.encode(initial, forKey: .initial)
    }

    /// One line of JSON, keys in the order of docs/api.md; the same object `Codable` encodes.
    public func jsonString() -> String {
        var writer = JSONWriter()
        writer.object { Self.write(self, to: &$0) }
        return writer.text
    }

    /// An inventory as one JSON array, as `Interfaces()` answers.
    public static func jsonArray(_ entries: [InterfaceChange]) -> String {
        var writer = JSONWriter()
        writer.array(entries) { Self.write($1, to: &$0) }
        return writer.text
    }

    /// Reads an entry written by `jsonString()`; as `Path(json:)`, at most 64 levels deep.
    public init(json: String) throws {
        self = try JSONReader.decode(InterfaceChange.self, from: json)
    }

    /// Reads an inventory written by `jsonArray(_:)`; as `Path(json:)`, at most 64 levels deep.
    public static func decodeArray(_ json: String) throws -> [InterfaceChange] {
        try JSONReader.decode([InterfaceChange].self, from: json)
    }

    private static func write(_ entry: InterfaceChange, to object: inout JSONWriter.ObjectWriter) {
        object.string("name", entry.interface.name)
        object.int("index", entry.interface.index)
        object.string("kind", entry.interface.kind.rawValue)
        object.string("operstate", entry.interface.operstate)
        object.bool("up", entry.interface.up)
        object.bool("carrier", entry.interface.carrier)
        object.strings("addresses", entry.interface.addresses)
        object.string("master", entry.master)
        object.bool("available", entry.available)
        object.bool("removed", entry.removed)
        object.bool("initial", entry.initial)
    }
}
