extension JSONReader {
    /// One parsed value seen through the `Decoder` protocol. What `JSONDecoder` lets
    /// a type read from a value, this does: a number as any numeric type it fits
    /// exactly, nothing converted between strings, numbers and bools.
    struct ValueDecoder: Decoder, SingleValueDecodingContainer {
        let value: Value
        /// The document's bytes, which strings and numbers are read from.
        let bytes: [UInt8]
        /// Where the value is: its container's coding path and its key there. The path
        /// itself is made only when asked for (a container, an error), not per value.
        let containerPath: [any CodingKey]
        let key: (any CodingKey)?

        init(value: Value, bytes: [UInt8], containerPath: [any CodingKey] = [], key: (any CodingKey)? = nil) {
            (self.value, self.bytes, self.containerPath, self.key) = (value, bytes, containerPath, key)
        }

        var codingPath: [any CodingKey] { key.map { containerPath + [$0] } ?? containerPath }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            guard case let .object(members) = value else { throw mismatch([String: Any].self) }
            return KeyedDecodingContainer(try KeyedContainer(members, of: self))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            guard case let .array(elements) = value else { throw mismatch([Any].self) }
            return UnkeyedContainer(elements: elements, of: self)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

        func mismatch(_ type: Any.Type) -> DecodingError {
            if case .null = value {
                return .valueNotFound(type, .init(codingPath: codingPath, debugDescription: "Expected \(type) but found null instead."))
            }
            return .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "Expected \(type) but found \(value.kind) instead."))
        }

        func decodeNil() -> Bool {
            if case .null = value { return true }
            return false
        }

        func decode(_ type: Bool.Type) throws -> Bool {
            guard case let .bool(bool) = value else { throw mismatch(type) }
            return bool
        }

        func decode(_ type: String.Type) throws -> String {
            guard case let .string(text) = value else { throw mismatch(type) }
            return try checked { () throws(Content.Invalid) in try Content.string(text, in: bytes) }
        }

        /// What `Content` reads, its failure said where in the document it was.
        func checked<R>(_ read: () throws(Content.Invalid) -> R) throws -> R {
            do {
                return try read()
            } catch {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "Invalid string: \(error.description)."))
            }
        }

        func decode(_ type: Double.Type) throws -> Double { try floatingPoint(type) }
        func decode(_ type: Float.Type) throws -> Float { try floatingPoint(type) }
        func decode(_ type: Int.Type) throws -> Int { try integer(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: self) }

        /// An integer written as one, or as a number whose value is one (`1e2`, `3.0`).
        private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
            guard case let .number(range) = value else { throw mismatch(type) }
            guard let integer = Content.integer(range, in: bytes, as: type) else { throw notFitting(range, type) }
            return integer
        }

        private func floatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(_ type: T.Type) throws -> T {
            guard case let .number(range) = value else { throw mismatch(type) }
            guard let number = Content.floatingPoint(range, in: bytes, as: type) else { throw notFitting(range, type) }
            return number
        }

        private func notFitting(_ range: Range<Int>, _ type: Any.Type) -> DecodingError {
            .dataCorrupted(
                .init(codingPath: codingPath, debugDescription: "Number \(String(decoding: bytes[range], as: UTF8.self)) is not a \(type).")
            )
        }
    }

    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        /// Each key with escapes, read; nil where the key is the document's bytes as they are.
        private let escapedKeys: [String?]
        private let members: [(key: Text, value: Value)]
        private let bytes: [UInt8]
        let codingPath: [any CodingKey]

        /// Every key is checked when the object is read, as `JSONDecoder` checks them;
        /// only a key with escapes is made a `String` for it.
        init(_ members: [(key: Text, value: Value)], of object: ValueDecoder) throws {
            (self.members, bytes, codingPath) = (members, object.bytes, object.codingPath)
            escapedKeys = try members.map { member in
                try object.checked { () throws(Content.Invalid) -> String? in
                    guard member.key.escaped else {
                        try Content.checkPlain(member.key, in: object.bytes)
                        return nil
                    }
                    return try Content.string(member.key, in: object.bytes)
                }
            }
        }

        private func name(_ index: Int) -> String {
            escapedKeys[index] ?? String(decoding: bytes[members[index].key.range], as: UTF8.self)
        }

        var allKeys: [Key] {
            var seen: Set<String> = []
            return members.indices.compactMap { seen.insert(name($0)).inserted ? Key(stringValue: name($0)) : nil }
        }

        /// A key written twice is the first one's, as `JSONDecoder` has it. Keys
        /// without escapes are compared as the document's bytes.
        private func member(_ key: Key) -> Value? {
            let wanted = key.stringValue
            for (index, member) in members.enumerated() {
                if let escaped = escapedKeys[index] {
                    if escaped == wanted { return member.value }
                } else if member.key.range.count == wanted.utf8.count, wanted.utf8.elementsEqual(bytes[member.key.range]) {
                    return member.value
                }
            }
            return nil
        }

        func contains(_ key: Key) -> Bool { member(key) != nil }

        private func child(_ value: Value, _ key: Key) -> ValueDecoder {
            ValueDecoder(value: value, bytes: bytes, containerPath: codingPath, key: key)
        }

        private func decoder(_ key: Key) throws -> ValueDecoder {
            guard let value = member(key) else {
                throw DecodingError.keyNotFound(
                    key, .init(codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
            }
            return child(value, key)
        }

        /// The value of a key that is there and not null: one look for what `contains`,
        /// `decodeNil` and `decode` would look for three times.
        private func present(_ key: Key) -> ValueDecoder? {
            guard let value = member(key) else { return nil }
            if case .null = value { return nil }
            return child(value, key)
        }

        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try present(key)?.decode(type) }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try present(key)?.decode(type) }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try present(key).map { try T(from: $0) } }

        func decodeNil(forKey key: Key) throws -> Bool { try decoder(key).decodeNil() }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder(key).decode(type) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder(key).decode(type) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decoder(key).decode(type) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decoder(key).decode(type) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder(key).decode(type) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decoder(key).decode(type) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decoder(key).decode(type) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decoder(key).decode(type) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decoder(key).decode(type) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decoder(key).decode(type) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decoder(key).decode(type) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decoder(key).decode(type) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decoder(key).decode(type) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decoder(key).decode(type) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try T(from: decoder(key)) }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws
            -> KeyedDecodingContainer<NestedKey>
        { try decoder(key).container(keyedBy: type) }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try decoder(key).unkeyedContainer() }

        func superDecoder() throws -> any Decoder {
            ValueDecoder(
                value: Key(stringValue: "super").flatMap(member) ?? .null, bytes: bytes, containerPath: codingPath, key: SuperKey.super)
        }

        func superDecoder(forKey key: Key) throws -> any Decoder { child(member(key) ?? .null, key) }
    }

    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let elements: [Value]
        private let bytes: [UInt8]
        let codingPath: [any CodingKey]
        private(set) var currentIndex = 0

        init(elements: [Value], of array: ValueDecoder) {
            (self.elements, bytes, codingPath) = (elements, array.bytes, array.codingPath)
        }

        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        /// The next element's decoder; the index moves on only once it decoded.
        private func next(_ type: Any.Type) throws -> ValueDecoder {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(
                    type, .init(codingPath: codingPath + [IndexKey(currentIndex)], debugDescription: "Unkeyed container is at end."))
            }
            return ValueDecoder(value: elements[currentIndex], bytes: bytes, containerPath: codingPath, key: IndexKey(currentIndex))
        }

        private mutating func take<T>(_ type: T.Type, _ read: (ValueDecoder) throws -> T) throws -> T {
            let value = try read(next(type))
            currentIndex += 1
            return value
        }

        mutating func decodeNil() throws -> Bool {
            guard try next(Never.self).decodeNil() else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: String.Type) throws -> String { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: Double.Type) throws -> Double { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: Float.Type) throws -> Float { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: Int.Type) throws -> Int { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try take(type) { try $0.decode(type) } }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try take(type) { try $0.decode(type) } }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try take(type) { try T(from: $0) } }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            try take(KeyedDecodingContainer<NestedKey>.self) { try $0.container(keyedBy: type) }
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            try take((any UnkeyedDecodingContainer).self) { try $0.unkeyedContainer() }
        }

        mutating func superDecoder() throws -> any Decoder { try take((any Decoder).self) { $0 } }
    }

    struct IndexKey: CodingKey {
        let intValue: Int?
        var stringValue: String { "Index \(intValue!)" }
        init(_ index: Int) { intValue = index }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { self.intValue = intValue }
    }

    enum SuperKey: String, CodingKey { case `super` }
}
