import CSystemd
import CSystemdShim
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One D-Bus interface served here, declared once: sd-bus's vtable (and so the
/// introspection data and `GetAll`) is built from this declaration, `Get` reads
/// its properties' values, and method calls are dispatched to its methods by name.
/// `Object` is what the vtable's user data points at (the object serving it, which
/// outlives every slot it is served under).
package struct BusInterface<Object: AnyObject>: Sendable {
    /// A property: its D-Bus type and how its value is read off the object.
    package struct Property: Sendable {
        package let name: String
        package let signature: String
        /// Never changes while the object is served under its path (else it emits PropertiesChanged).
        package let constant: Bool
        /// Its value, nil when the object has none now.
        package let value: @Sendable (Object) -> BusValue?

        package init(
            _ name: String, _ signature: String, constant: Bool = false,
            value: @escaping @Sendable (Object) -> BusValue?
        ) {
            (self.name, self.signature, self.constant, self.value) = (name, signature, constant, value)
        }
    }

    /// A method: its arguments' and reply's signatures, and its handler, which
    /// answers the call (now or later) and returns what sd-bus expects of a handler.
    package struct Method: Sendable {
        package let name: String
        package let input: String
        package let output: String
        package let call: @Sendable (Object, BusCall) -> Int32

        package init(_ name: String, _ input: String, _ output: String, call: @escaping @Sendable (Object, BusCall) -> Int32) {
            (self.name, self.input, self.output, self.call) = (name, input, output, call)
        }
    }

    /// A signal, for introspection: it is emitted with its arguments where it happens.
    package struct Signal: Sendable {
        package let name: String
        package let signature: String

        package init(_ name: String, _ signature: String) { (self.name, self.signature) = (name, signature) }
    }

    package let name: String
    package let properties: [Property]
    package let methods: [Method]
    package let signals: [Signal]
    /// Built once from the declaration; it lives as long as the process (interfaces are `static let`s).
    private let vtable: BusVtable

    package init(_ name: String, properties: [Property] = [], methods: [Method] = [], signals: [Signal] = []) {
        (self.name, self.properties, self.methods, self.signals) = (name, properties, methods, signals)
        vtable = BusVtable(
            properties.map { .init(kind: REACHD_BUS_PROPERTY, name: $0.name, signature: $0.signature, constant: $0.constant) }
                + methods.map { .init(kind: REACHD_BUS_METHOD, name: $0.name, signature: $0.input, result: $0.output) }
                + signals.map { .init(kind: REACHD_BUS_SIGNAL, name: $0.name, signature: $0.signature) })
        let byName = Dictionary(uniqueKeysWithValues: methods.map { ($0.name, $0.call) })
        let properties = Dictionary(uniqueKeysWithValues: self.properties.map { ($0.name, $0.value) })
        BusDispatch.register(
            name,
            BusDispatch.Entry(
                method: { object, member, call in byName[member].map { $0(object as! Object, call) } },
                property: { object, property in properties[property]?(object as! Object) }))
    }

    /// PropertiesChanged carrying `changed` (nothing when empty). Written here, values
    /// in hand, rather than by `sd_bus_emit_properties_changed`, which finds each
    /// property in the object tree and reads it through its getter: that cost more than
    /// the rest of a change's publication (BENCHMARKS.md §23).
    package func emitPropertiesChanged(_ changed: [(name: String, value: BusValue)], at path: String, on bus: OpaquePointer) {
        guard !changed.isEmpty else { return }
        var message: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &message, path, "org.freedesktop.DBus.Properties", "PropertiesChanged") >= 0 else {
            return
        }
        defer { sd_bus_message_unref(message) }
        func open(_ type: UInt8, _ contents: StaticString) -> Int32 {
            contents.withCString { sd_bus_message_open_container(message, CChar(type), $0) }
        }
        func append(_ text: String) -> Int32 {
            text.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }
        }
        var result = append(name)
        if result >= 0 { result = open(UInt8(ascii: "a"), "{sv}") }
        for (property, value) in changed where result >= 0 {
            result = open(UInt8(ascii: "e"), "sv")
            if result >= 0 { result = append(property) }
            if result >= 0 { result = open(UInt8(ascii: "v"), value.signature) }
            if result >= 0 { result = value.append(to: message) }
            if result >= 0 { result = sd_bus_message_close_container(message) }
            if result >= 0 { result = sd_bus_message_close_container(message) }
        }
        if result >= 0 { result = sd_bus_message_close_container(message) }
        // No invalidated properties: every value that changed is carried.
        if result >= 0 { result = open(UInt8(ascii: "a"), "s") }
        if result >= 0 { result = sd_bus_message_close_container(message) }
        if result >= 0 { _ = sd_bus_send(bus, message, nil) }
    }

    /// Serves `object` under `path` on `connection`, for as long as the connection lives.
    package func serve(_ object: Object, at path: String, on connection: BusConnection) throws(BusError) {
        connection.slots.append(try slot(serving: object, at: path, on: connection))
    }

    /// Serves `object` under `path` until the returned slot is released (`sd_bus_slot_unref`).
    package func slot(serving object: Object, at path: String, on connection: BusConnection) throws(BusError) -> OpaquePointer {
        var slot: OpaquePointer?
        try check(
            sd_bus_add_object_vtable(connection.bus, &slot, path, name, vtable.table, Unmanaged.passUnretained(object).toOpaque()),
            "serving \(name) at \(path)")
        return slot!
    }
}

extension StaticString {
    /// A literal's bytes are stored with a terminating NUL: no copy is needed.
    func withCString<Result>(_ body: (UnsafePointer<CChar>) -> Result) -> Result {
        body(UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self))
    }
}

/// A vtable sd-bus reads for as long as the process runs.
private struct BusVtable: @unchecked Sendable {
    let table: UnsafePointer<sd_bus_vtable>

    init(_ members: [Member]) {
        let table = members.withCStrings { reachd_bus_vtable_new($0, $0.count) }
        guard let table else { fatalError("out of memory building a D-Bus vtable") }
        self.table = table
    }

    struct Member {
        var kind: reachd_bus_member_kind
        var name: String
        var signature: String
        var result: String? = nil
        var constant = false
    }
}

private extension Array where Element == BusVtable.Member {
    /// The C view of the members, valid inside `body` (the C side copies what it keeps).
    func withCStrings<Result>(_ body: ([reachd_bus_member]) -> Result) -> Result {
        var strings: [UnsafeMutablePointer<CChar>?] = []
        defer { strings.forEach { free($0) } }
        let copy = { (text: String?) -> UnsafePointer<CChar>? in
            guard let text else { return nil }
            let duplicate = strdup(text)
            strings.append(duplicate)
            return UnsafePointer(duplicate)
        }
        let members = map {
            reachd_bus_member(
                kind: $0.kind, name: copy($0.name), signature: copy($0.signature), result: copy($0.result),
                constant: $0.constant ? 1 : 0)
        }
        return body(members)
    }
}

/// Where the C trampolines land: each interface's members by its name (every served
/// interface has its own), the object from the vtable's user data.
private enum BusDispatch {
    struct Entry: @unchecked Sendable {
        let method: (AnyObject, String, BusCall) -> Int32?
        let property: (AnyObject, String) -> BusValue?
    }

    private static let entries = Mutex<[String: Entry]>([:])

    static func register(_ interface: String, _ entry: Entry) {
        _ = installTrampolines
        entries.withLock { $0[interface] = entry }
    }

    private static func entry(_ interface: UnsafePointer<CChar>?) -> Entry? {
        guard let interface else { return nil }
        let name = String(cString: interface)
        return entries.withLock { $0[name] }
    }

    private static let installTrampolines: Void = reachd_bus_set_dispatch(
        { message, userdata, error in
            guard let userdata, let member = sd_bus_message_get_member(message),
                let entry = BusDispatch.entry(sd_bus_message_get_interface(message))
            else { return -ENOENT }
            let object = Unmanaged<AnyObject>.fromOpaque(userdata).takeUnretainedValue()
            return entry.method(object, String(cString: member), BusCall(message: message, error: error)) ?? -ENOENT
        },
        { _, _, interface, name, reply, userdata, _ in
            guard let userdata, let name, let entry = BusDispatch.entry(interface) else { return -ENOENT }
            let object = Unmanaged<AnyObject>.fromOpaque(userdata).takeUnretainedValue()
            guard let value = entry.property(object, String(cString: name)) else { return -ENOENT }
            return value.append(to: reply)
        })
}
