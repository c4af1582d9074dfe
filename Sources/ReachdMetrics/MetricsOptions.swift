import IPAddresses
import SystemCalls
import TOML

/// The `[metrics]` table of reachd.toml: both exports are off unless configured.
package struct MetricsOptions: Sendable, Equatable {
    /// Where `GET /metrics` is served; nil: no listener.
    package var listen: ListenAddress?
    /// The node_exporter textfile reachd rewrites on every change; nil: none.
    package var textfile: String?

    package init(listen: ListenAddress? = nil, textfile: String? = nil) {
        self.listen = listen
        self.textfile = textfile
    }

    /// An IP address and a TCP port: `127.0.0.1:9748`, `[::1]:9748`, `0.0.0.0:9748`.
    /// No host names: the daemon binds before any resolver is worth trusting.
    package struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
        package var address: IPAddress
        package var port: UInt16

        package init?(_ text: String) {
            // Bytes, not Characters: grapheme breaking would keep its tables resident in the daemon.
            let bytes = Array(text.utf8)
            let host: ArraySlice<UInt8>
            let port: ArraySlice<UInt8>
            if bytes.first == UInt8(ascii: "[") {
                guard let close = bytes.firstIndex(of: UInt8(ascii: "]")), close + 1 < bytes.count,
                    bytes[close + 1] == UInt8(ascii: ":")
                else { return nil }
                host = bytes[1..<close]
                port = bytes[(close + 2)...]
            } else {
                guard let colon = bytes.lastIndex(of: UInt8(ascii: ":")), !bytes[..<colon].contains(UInt8(ascii: ":")) else { return nil }
                host = bytes[..<colon]
                port = bytes[(colon + 1)...]
            }
            guard !port.isEmpty, port.count <= 5, port.allSatisfy({ (48...57).contains($0) }),
                let address = IPAddress(String(decoding: host, as: UTF8.self)),
                let number = UInt16(String(decoding: port, as: UTF8.self)), number > 0
            else { return nil }
            self.address = address
            self.port = number
        }

        package var description: String {
            address.family == .v6 ? "[\(address)]:\(port)" : "\(address):\(port)"
        }
    }

    /// Reads a `[metrics]` table, rejecting unknown keys and bad values with `file:line`.
    package init(reading table: inout TOMLTableReader) throws(TOMLError) {
        self.init()
        if let (text, line) = try table.string("listen") {
            guard let address = ListenAddress(text) else {
                throw table.error("listen must be ADDRESS:PORT (\"127.0.0.1:9748\", \"[::1]:9748\"), not \"\(text)\"", line: line)
            }
            listen = address
        }
        if let (path, line) = try table.string("textfile") {
            // node_exporter's textfile collector reads *.prom only: any other name would be silently ignored.
            guard path.utf8.first == UInt8(ascii: "/"), path.utf8.reversed().starts(with: ".prom".utf8.reversed()),
                !path.utf8.reversed().starts(with: "/.prom".utf8.reversed())
            else {
                throw table.error(
                    "textfile must be an absolute path ending in .prom (node_exporter reads no other), not \"\(path)\"", line: line)
            }
            textfile = path
        }
        try table.finish()
    }
}
