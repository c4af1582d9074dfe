/// The byte-level pieces both HTTP/1.x head parsers use (the metrics server's
/// requests, the connectivity probe's responses). ASCII only, on purpose: the
/// String algorithms that would do the same (Unicode case mapping, searching)
/// stay resident in every idle reachd.
package enum HTTPHeadBytes {
    /// The head's lines, without their CR (a bare LF also ends a line).
    package static func lines(_ head: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        head.split(separator: 10, omittingEmptySubsequences: false).map { $0.last == 13 ? $0.dropLast() : $0 }
    }

    /// ASCII letters lowered, every other byte kept: header names compare case-insensitively.
    package static func lowercased<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        bytes.map { (65...90).contains($0) ? $0 + 32 : $0 }
    }

    /// A header value without the spaces and tabs around it.
    package static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var value = bytes
        while let first = value.first, first == 0x20 || first == 0x09 { value.removeFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value.removeLast() }
        return value
    }
}
