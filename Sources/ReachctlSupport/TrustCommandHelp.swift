/// What `reachctl trust`'s commands are, for the help of reachctl (which lists
/// them) and of reachd-trust (which runs the TLS ones): one text for both.
public enum TrustCommandHelp {
    public static let abstract = "Check TLS servers against pins and policies."

    public static let discussion = """
        Hosts are judged with the policy of their [[trust.host]] entry in the config \
        (the longest matching pattern), or with --pin/--ca when given, or else with the \
        default evaluation: the chain to the system's roots, the host name, and the ATS \
        baseline (TLS 1.2+, forward secrecy, SHA-256+ signatures).
        """

    /// The commands that need TLS and run in reachd-trust, with their summaries.
    public static let tlsCommands: KeyValuePairs<String, String> = [
        "check": "Connect to a TLS server and judge its chain now.",
        "verify": "Judge a saved chain offline, with the same policy as check.",
        "pin": "Print the pin of each certificate, leaf first.",
        "diagnose": "Try TLS 1.0–1.3 with and without forward secrecy against the ATS baseline."
    ]

    public static func abstract(of command: String) -> String {
        tlsCommands.first { $0.key == command }?.value ?? ""
    }
}
