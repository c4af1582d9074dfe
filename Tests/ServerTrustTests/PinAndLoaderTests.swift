import Foundation
import ServerTrust
import TestTraits
import Testing
import X509

@Suite("Pins and certificate loading", .ownThreads)
struct PinAndLoaderTests {
    @Test(
        "pins equal openssl's SPKI hash",
        arguments: [
            "rsa:2048", "rsa:4096", "ec -pkeyopt ec_paramgen_curve:P-256", "ec -pkeyopt ec_paramgen_curve:P-384", "ed25519"
        ])
    func pinsMatchOpenSSL(keyOptions: String) throws {
        let scratch = try OpenSSLScratch()
        try scratch.selfSigned("server", keyOptions: keyOptions)
        let certificate = try #require(try CertificateLoader.certificates(inFile: scratch.path("server.pem")).first)
        #expect(try PublicKeyPin(certificate: certificate).description == scratch.pin(of: "server"))
    }

    @Test("pins parse in every common spelling and reject other lengths")
    func pinParsing() throws {
        let base64 = "YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="
        for spelling in ["sha256/\(base64)", "sha256//\(base64)", "pin-sha256=\"\(base64)\"", base64, " sha256/\(base64) "] {
            #expect(try PublicKeyPin(parsing: spelling).description == "sha256/\(base64)", "\(spelling)")
        }
        #expect(throws: PinParsingError.self) { try PublicKeyPin(parsing: "sha256/AAAA") }
        #expect(throws: PinParsingError.self) { try PublicKeyPin(parsing: "sha256/not base64!") }
    }

    /// One key in 64 has a pin whose base64 begins with "/" (a first byte of 0xFC
    /// or more): `trust pin` printed "sha256//…", which the parser took for curl's
    /// prefix and rejected.
    @Test("every pin round-trips: what description prints, and every spelling of it, parse to the same pin")
    func pinRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        var samples = (0..<2000).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        // Base64 beginning with "/" ("/" is 63: the first six bits set), "+" (62), and "//".
        samples += [
            [0xFF] + Array(repeating: 0, count: 31), [0xFC] + Array(repeating: 0xFF, count: 31),
            [0xF8] + Array(repeating: 1, count: 31), [0xFF, 0xF0] + Array(repeating: 7, count: 30)
        ]
        // Found by the pin fuzzer: base64 that itself begins "sha256/" (or "SHA256/") was
        // stripped of it when written bare, and rejected as 26 bytes.
        samples += ["sha256/YmszoLUZNBWM2CXV5uxDm818GJjk0Fk3pI1I=", "SHA256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]
            .map { Array(Data(base64Encoded: $0)!) }
        var slashes = 0
        for bytes in samples {
            let pin = try #require(PublicKeyPin(sha256: bytes))
            let base64 = Data(bytes).base64EncodedString()
            if base64.hasPrefix("/") { slashes += 1 }
            for spelling in [
                pin.description, "sha256/\(base64)", "sha256//\(base64)", "pin-sha256=\"\(base64)\"", base64, "SHA256/\(base64)"
            ] {
                #expect(try PublicKeyPin(parsing: spelling) == pin, "\(spelling)")
            }
        }
        #expect(slashes >= 4, "the samples include pins that begin with /")
    }

    @Test("a certificate whose RSA key does not parse is an error, not an abort (found by the certificates fuzzer)")
    func unparsableRSAKey() throws {
        // swift-crypto 3.x freed the key twice when both RSA encodings failed to parse
        // (BoringSSL aborts on the refcount): a server's certificate could kill reachd-trust.
        let input = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../FuzzTesting/Corpus/certificates/crash-rsa-key-double-free").standardizedFileURL
        #expect(throws: (any Error).self) { try CertificateLoader.certificates(in: Array(try Data(contentsOf: input))) }
    }

    @Test("DER, PEM, bundles and directories load; keys, garbage and empty files are named")
    func loading() throws {
        let scratch = try OpenSSLScratch()
        try scratch.selfSigned("a", keyOptions: "ec -pkeyopt ec_paramgen_curve:P-256")
        try scratch.selfSigned("b", keyOptions: "ed25519")
        try scratch.shell("openssl x509 -in a.pem -outform der -out a.DER && cat a.pem b.pem > bundle.crt")
        try scratch.shell(
            "printf 'not a certificate' > garbage.cer && : > empty.pem && mkdir dir && cp a.DER bundle.crt dir/ && cp a.key dir/a.txt")

        #expect(try CertificateLoader.certificates(inFile: scratch.path("a.DER")).count == 1)
        #expect(try CertificateLoader.certificates(inFile: scratch.path("bundle.crt")).count == 2)
        #expect(try CertificateLoader.certificates(inDirectory: scratch.path("dir")).count == 3, "extensions in any case; .txt ignored")
        #expect(
            try CertificateLoader.certificates(inFile: scratch.path("a.pem"))
                == CertificateLoader.certificates(inFile: scratch.path("a.DER")))

        func reason(_ file: String) -> String {
            do {
                _ = try CertificateLoader.certificates(inFile: scratch.path(file))
                return "loaded"
            } catch let error as CertificateLoadingError {
                #expect(error.file == scratch.path(file))
                return error.reason
            } catch {
                return "\(error)"
            }
        }
        #expect(reason("a.key").contains("a key, not a certificate"))
        #expect(reason("garbage.cer").hasPrefix("is neither PEM nor a DER certificate"))
        #expect(reason("empty.pem") == "is empty")
        #expect(reason("missing.pem").hasPrefix("cannot be read"))
    }
}
