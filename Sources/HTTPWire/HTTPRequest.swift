/// What the metrics server needs of an HTTP/1.x request head: the method, the
/// target and the `Accept` header. Everything else (other headers, a body) is ignored.
/// Parsed as bytes (`HTTPHeadBytes`): the String algorithms that would do it in a line
/// (Unicode case mapping, `firstRange(of:)`) touched half a megabyte more of the
/// daemon's code pages — resident memory of every idle reachd.
package enum HTTPRequest: Equatable {
    /// No blank line yet.
    case incomplete
    case malformed
    case complete(method: String, target: String, accept: String?)

    package init(_ bytes: [UInt8]) {
        guard let end = Self.headEnd(bytes) else {
            self = .incomplete
            return
        }
        var lines = HTTPHeadBytes.lines(bytes[..<end])[...]
        let requestLine = lines.popFirst().map { $0.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false) } ?? []
        guard requestLine.count == 3, requestLine[2].starts(with: "HTTP/1.".utf8), !requestLine[0].isEmpty,
            requestLine[1].first == UInt8(ascii: "/")
        else {
            self = .malformed
            return
        }
        var accept: String?
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                self = .malformed
                return
            }
            if HTTPHeadBytes.lowercased(line[..<colon]) == Array("accept".utf8) {
                let value = String(decoding: HTTPHeadBytes.trimmed(line[(colon + 1)...]), as: UTF8.self)
                accept = accept.map { "\($0), \(value)" } ?? value
            }
        }
        self = .complete(
            method: String(decoding: requestLine[0], as: UTF8.self),
            target: String(decoding: requestLine[1], as: UTF8.self), accept: accept)
    }

    /// Where the blank line that ends the head begins.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...bytes.count - 4
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

}
