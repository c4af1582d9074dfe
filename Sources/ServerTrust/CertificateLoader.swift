import SwiftASN1
import SystemPackage
import TOML
import X509

#if canImport(Glibc)
import Glibc
#endif

/// A certificate file that could not be used, and why.
public struct CertificateLoadingError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The file as configured.
    public let file: String
    /// What is wrong with it: unreadable, not PEM or DER, no certificate in it.
    public let reason: String
    public var description: String { "\(file): \(reason)" }
}

/// Loads certificates the way Alamofire's `certificates(in:)` does: DER and PEM
/// files, PEM bundles, and directories of `.cer .crt .der .pem` files (any case).
public enum CertificateLoader {
    /// The extensions a directory is searched for, compared case-insensitively.
    public static let certificateExtensions: Set<String> = ["cer", "crt", "der", "pem"]

    /// Every certificate in one file: one DER certificate, or any number of PEM ones.
    /// - Throws: `CertificateLoadingError` naming the file: empty, a key instead of a
    ///   certificate, or not a certificate at all.
    public static func certificates(inFile path: String) throws -> [Certificate] {
        try certificates(in: try readAll(path), source: path)
    }

    /// Every certificate in the files of a directory with a certificate extension, sorted by name.
    public static func certificates(inDirectory path: String) throws -> [Certificate] {
        guard let directory = opendir(path) else {
            throw CertificateLoadingError(file: path, reason: "cannot be listed (\(Errno(rawValue: errno)))")
        }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(directory)
        return try names.sorted().filter { name in
            guard let dot = name.lastIndex(of: ".") else { return false }
            return certificateExtensions.contains(name[name.index(after: dot)...].lowercased())
        }.flatMap { try certificates(inFile: "\(path)/\($0)") }
    }

    /// A certificate file is small: anything over this is not one.
    static let maximumFileSize = 16 << 20

    private static func readAll(_ path: String) throws -> [UInt8] {
        do {
            return try SmallFile.read(path, limit: maximumFileSize)
        } catch .unreadable(let reason) {
            throw CertificateLoadingError(file: path, reason: "cannot be read (\(reason))")
        } catch {
            throw CertificateLoadingError(file: path, reason: "is larger than \(maximumFileSize >> 20) MiB: not a certificate file")
        }
    }

    /// Certificates from bytes: PEM (one or many) or a single DER certificate.
    public static func certificates(in bytes: [UInt8], source: String = "<data>") throws -> [Certificate] {
        guard bytes.contains(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }) else {
            throw CertificateLoadingError(file: source, reason: "is empty")
        }
        if let text = String(validating: bytes, as: UTF8.self), text.contains("-----BEGIN ") {
            return try pemCertificates(text, source: source)
        }
        do {
            return [try Certificate(derEncoded: bytes)]
        } catch {
            throw CertificateLoadingError(file: source, reason: "is neither PEM nor a DER certificate (\(error))")
        }
    }

    private static func pemCertificates(_ text: String, source: String) throws -> [Certificate] {
        let documents: [PEMDocument]
        do {
            documents = try PEMDocument.parseMultiple(pemString: text)
        } catch {
            throw CertificateLoadingError(file: source, reason: "holds malformed PEM (\(error))")
        }
        var certificates: [Certificate] = []
        var others: [String] = []
        for document in documents {
            guard document.discriminator == "CERTIFICATE" else {
                others.append(document.discriminator)
                continue
            }
            do {
                certificates.append(try Certificate(pemDocument: document))
            } catch {
                throw CertificateLoadingError(file: source, reason: "holds a CERTIFICATE block that does not parse (\(error))")
            }
        }
        guard !certificates.isEmpty else {
            let found = others.isEmpty ? "no PEM blocks" : others.map { "a \($0)" }.joined(separator: ", ")
            let hint = others.contains { $0.contains("KEY") } ? " — a key, not a certificate" : ""
            throw CertificateLoadingError(file: source, reason: "holds no certificate, only \(found)\(hint)")
        }
        return certificates
    }
}
