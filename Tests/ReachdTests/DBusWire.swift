/// D-Bus messages marshalled by hand, little-endian: what a test needs to write
/// exactly the bytes it means — including the ones no library would write
/// (a lying signature, a string that is not UTF-8, a truncated header).
struct DBusWire {
    /// One value of a body. Strings are bytes: they need not be UTF-8.
    indirect enum Value {
        case byte(UInt8)
        case boolean(UInt32)
        case int32(Int32)
        case uint32(UInt32)
        case string([UInt8])
        case objectPath([UInt8])
        case signature([UInt8])
        case strings([[UInt8]])
        case variant(signature: String, Value)

        static func text(_ text: String) -> Value { .string(Array(text.utf8)) }
    }

    /// A body: its bytes, aligned from its start (which the header pads to 8).
    struct Body {
        private(set) var bytes: [UInt8] = []

        mutating func pad(to alignment: Int) {
            while bytes.count % alignment != 0 { bytes.append(0) }
        }

        mutating func append(_ value: Value) {
            switch value {
            case let .byte(byte): bytes.append(byte)
            case let .boolean(raw): appendUInt32(raw)
            case let .int32(number): appendUInt32(UInt32(bitPattern: number))
            case let .uint32(number): appendUInt32(number)
            case let .string(text), let .objectPath(text):
                appendUInt32(UInt32(text.count))
                bytes += text + [0]
            case let .signature(text):
                bytes.append(UInt8(truncatingIfNeeded: text.count))
                bytes += text + [0]
            case let .strings(texts):
                pad(to: 4)
                let lengthAt = bytes.count
                appendUInt32(0)
                let start = bytes.count
                for text in texts { append(.string(text)) }
                let length = UInt32(bytes.count - start)
                withUnsafeBytes(of: length.littleEndian) { bytes.replaceSubrange(lengthAt..<(lengthAt + 4), with: $0) }
            case let .variant(signature, inner):
                append(.signature(Array(signature.utf8)))
                append(inner)
            }
        }

        private mutating func appendUInt32(_ number: UInt32) {
            pad(to: 4)
            withUnsafeBytes(of: number.littleEndian) { bytes += $0 }
        }
    }

    /// The signature a library would give `values`.
    static func signature(of values: [Value]) -> String {
        values.map { value -> String in
            switch value {
            case .byte: "y"
            case .boolean: "b"
            case .int32: "i"
            case .uint32: "u"
            case .string: "s"
            case .objectPath: "o"
            case .signature: "g"
            case .strings: "as"
            case .variant: "v"
            }
        }.joined()
    }

    /// A message (type 1: method call), with `signature` as given — it may lie about the body.
    static func message(
        type: UInt8 = 1, flags: UInt8 = 0, serial: UInt32, path: String?, interface: String?, member: String?,
        destination: String?, signature: String?, body: [UInt8] = []
    ) -> [UInt8] {
        var fields = Body()
        func field(_ code: UInt8, _ value: Value, _ type: String) {
            fields.pad(to: 8)
            fields.append(.byte(code))
            fields.append(.signature(Array(type.utf8)))
            fields.append(value)
        }
        if let path { field(1, .objectPath(Array(path.utf8)), "o") }
        if let interface { field(2, .text(interface), "s") }
        if let member { field(3, .text(member), "s") }
        if let destination { field(6, .text(destination), "s") }
        if let signature, !signature.isEmpty { field(8, .signature(Array(signature.utf8)), "g") }
        var header = Body()
        header.append(.byte(UInt8(ascii: "l")))
        header.append(.byte(type))
        header.append(.byte(flags))
        header.append(.byte(1))
        header.append(.uint32(UInt32(body.count)))
        header.append(.uint32(serial))
        header.append(.uint32(UInt32(fields.bytes.count)))
        var message = header.bytes + fields.bytes
        while message.count % 8 != 0 { message.append(0) }
        return message + body
    }

    /// A method call whose body holds `values` under their own signature.
    static func call(
        serial: UInt32, path: String, interface: String?, member: String, destination: String?, _ values: [Value] = []
    ) -> [UInt8] {
        var body = Body()
        for value in values { body.append(value) }
        return message(
            serial: serial, path: path, interface: interface, member: member, destination: destination,
            signature: signature(of: values), body: body.bytes)
    }
}
