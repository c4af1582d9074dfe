import ArgumentParser
import ReachctlSupport
import ServerTrust
import X509

struct TrustPinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: TrustCommandHelp.abstract(of: "pin"),
        discussion:
            "The pin is sha256/ and the base64 SHA-256 of the DER SubjectPublicKeyInfo (what openssl x509 -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 computes). From a server the chain is printed as presented, even when it does not validate: it is how a first config is written."
    )

    @Argument(help: ArgumentHelp("A certificate file (PEM, DER, bundle) or https://HOST[:PORT].", valueName: "file|url"))
    var source: String

    @Flag(help: "Print JSON.")
    var json = false

    struct Entry: Encodable {
        var pin: String
        var subject: String
        var issuer: String
    }

    func run() async throws {
        let certificates: [Certificate]
        if source.lowercased().hasPrefix("https://") {
            guard let server = ServerAddress(argument: source) else { throw fail(source, "is not https://HOST[:PORT]") }
            switch await TLSProbe().probe(host: server.host, port: server.port ?? 443) {
            case let .success(presented):
                if let undecodable = presented.undecodable { write(line: "reachctl: \(source): \(undecodable)", to: 2) }
                certificates = presented.chain
            case let .failure(failure):
                throw fail(source, failure)
            }
        } else {
            do { certificates = try CertificateLoader.certificates(inFile: source) } catch { throw fail("reading", error) }
        }
        let entries = try certificates.map { certificate in
            Entry(
                pin: try PublicKeyPin(certificate: certificate).description, subject: "\(certificate.subject)",
                issuer: "\(certificate.issuer)")
        }
        if json {
            try writeJSON(entries)
        } else {
            for entry in entries { write(line: "\(entry.pin)  \(entry.subject)") }
        }
    }
}
