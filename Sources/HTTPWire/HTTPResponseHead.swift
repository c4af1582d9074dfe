/// The head of an HTTP/1.x response, read from bytes (what the connectivity probe
/// needs: status, Location, how the body is framed), as bytes (`HTTPHeadBytes`).
package struct HTTPResponseHead: Equatable {
    package var status: Int
    package var location: [UInt8]?
    package var contentLength: Int?
    package var chunked: Bool
    /// Where the body starts in the bytes parsed.
    package var bodyStart: Int

    /// nil until the head is complete, or when the bytes are not an HTTP response.
    package init?(_ bytes: [UInt8]) {
        guard let end = Self.endOfHead(bytes) else { return nil }
        var lines = HTTPHeadBytes.lines(bytes[..<end.head])
        guard let statusLine = lines.first, statusLine.starts(with: Array("HTTP/1.".utf8)), statusLine.count >= 12,
            statusLine[statusLine.startIndex + 8] == UInt8(ascii: " ")
        else { return nil }
        let digits = statusLine[(statusLine.startIndex + 9)..<(statusLine.startIndex + 12)]
        guard digits.allSatisfy({ (48...57).contains($0) }) else { return nil }
        status = digits.reduce(0) { $0 * 10 + Int($1 - 48) }
        chunked = false
        bodyStart = end.body
        lines.removeFirst()
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = HTTPHeadBytes.lowercased(line[..<colon])
            let value = HTTPHeadBytes.trimmed(line[(colon + 1)...])
            switch name {
            case Array("location".utf8): location = Array(value)
            case Array("content-length".utf8):
                guard !value.isEmpty, value.count <= 12, value.allSatisfy({ (48...57).contains($0) }) else { return nil }
                contentLength = value.reduce(0) { $0 * 10 + Int($1 - 48) }
            case Array("transfer-encoding".utf8): chunked = HTTPHeadBytes.lowercased(value).suffix(7).elementsEqual("chunked".utf8)
            default: break
            }
        }
    }

    /// The body once `needed` bytes of it are known, or all of it is: nil while
    /// neither (more may come). 204 and 304 have none, whatever the headers say.
    package func body(of bytes: [UInt8], atEnd: Bool, needed: Int) -> [UInt8]? {
        if status == 204 || status == 304 { return [] }
        let raw = bytes[bodyStart...]
        if chunked {
            let (decoded, complete) = Self.dechunk(raw)
            return complete || decoded.count >= needed || atEnd ? decoded : nil
        }
        if let contentLength {
            let available = Array(raw.prefix(contentLength))
            return available.count == contentLength || available.count >= needed || atEnd ? available : nil
        }
        return raw.count >= needed || atEnd ? Array(raw) : nil
    }

    /// The end of the head (CRLF CRLF, or bare LF LF as lenient clients accept).
    private static func endOfHead(_ bytes: [UInt8]) -> (head: Int, body: Int)? {
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\n") { return (index, index + 2) }
                if index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "\r"), bytes[index + 2] == UInt8(ascii: "\n") {
                    return (index, index + 3)
                }
            }
            index += 1
        }
        return nil
    }

    /// The data of the chunks received so far, and whether the last (empty) chunk came.
    package static func dechunk(_ bytes: ArraySlice<UInt8>) -> (data: [UInt8], complete: Bool) {
        var data: [UInt8] = []
        var rest = bytes
        while let newline = rest.firstIndex(of: UInt8(ascii: "\n")) {
            var size = 0
            for byte in rest[..<newline] {
                guard let digit = hexValue(byte) else { break }
                size = size * 16 + digit
                guard size <= 1 << 24 else { return (data, true) }
            }
            if size == 0 { return (data, true) }
            let start = newline + 1
            let available = rest[start...].prefix(size)
            data += available
            guard available.count == size else { return (data, false) }
            rest = rest[(start + size)...].drop { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }
        }
        return (data, false)
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 48...57: Int(byte - 48)
        case 97...102: Int(byte - 87)
        case 65...70: Int(byte - 55)
        default: nil
        }
    }
}
