/// What the metrics server needs of an HTTP/1.x request head: the method, the
/// target and the `Accept` header. Everything else (other headers, a body) is ignored.
enum HTTPRequest: Equatable {
    /// No blank line yet.
    case incomplete
    case malformed
    case complete(method: String, target: String, accept: String?)

    init(_ bytes: [UInt8]) {
        let terminator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = bytes.firstRange(of: terminator) else {
            self = .incomplete
            return
        }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)[...]
        let requestLine = lines.popFirst()?.split(separator: " ", omittingEmptySubsequences: false) ?? []
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1."), !requestLine[0].isEmpty,
              requestLine[1].hasPrefix("/") else {
            self = .malformed
            return
        }
        var accept: String?
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else {
                self = .malformed
                return
            }
            if line[..<colon].lowercased() == "accept" {
                let value = line[line.index(after: colon)...].trimmingPrefix(" ")
                accept = accept.map { "\($0), \(value)" } ?? String(value)
            }
        }
        self = .complete(method: String(requestLine[0]), target: String(requestLine[1]), accept: accept)
    }
}
