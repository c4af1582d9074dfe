import Netlink
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
            let host: Substring
            let port: Substring
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
                host = text[text.index(after: text.startIndex)..<close]
                port = text[text.index(close, offsetBy: 2)...]
            } else {
                guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
                host = text[..<colon]
                port = text[text.index(after: colon)...]
            }
            guard let address = IPAddress(String(host)), let number = UInt16(port), number > 0,
                  port.allSatisfy(\.isASCII) else { return nil }
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
            guard path.hasPrefix("/"), path.hasSuffix(".prom"), !path.hasSuffix("/.prom") else {
                throw table.error("textfile must be an absolute path ending in .prom (node_exporter reads no other), not \"\(path)\"", line: line)
            }
            textfile = path
        }
        try table.finish()
    }
}
