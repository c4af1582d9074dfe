import FoundationEssentials
import SwiftASN1
import X509

/// RFC 5280 4.2.1.10 and 6.1.3 (b)–(c): a CA's name constraints bind every
/// certificate below it in the chain, except self-issued intermediates (key
/// rollover certificates); a self-signed leaf that is its own anchor is held to
/// its own. Every name form is processed — dNSName, iPAddress, rfc822Name (also
/// emailAddress in the subject), uniformResourceIdentifier and directoryName
/// (the subject and directoryName alternative names, by RDN prefix) — and a
/// constraint on a form we cannot compare (otherName of the same type, x400Address,
/// ediPartyName, registeredID) rejects only a certificate that has a name of that form.
struct NameConstraintsPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [.X509ExtensionID.nameConstraints]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let certificates = Array(chain)
        let constrainers = certificates.count == 1 ? [0] : Array(1..<certificates.count)
        for position in constrainers {
            let authority = certificates[position]
            let constraints: NameConstraints?
            do { constraints = try authority.extensions.nameConstraints } catch {
                return .failsToMeetPolicy(reason: "\(authority.subject): unreadable name constraints: \(error)")
            }
            guard let constraints else { continue }
            let bound = certificates.count == 1 ? certificates[...] : certificates[..<position]
            for (index, certificate) in bound.enumerated() where index == 0 || certificate.subject != certificate.issuer {
                let names: [GeneralName]
                do { names = try Self.names(of: certificate) } catch {
                    return .failsToMeetPolicy(reason: "\(certificate.subject): unreadable subject alternative names: \(error)")
                }
                for name in names {
                    if let reason = Self.violation(of: constraints, by: name) {
                        return .failsToMeetPolicy(reason: "\(reason) (name constraints of \(authority.subject))")
                    }
                }
            }
        }
        return .meetsPolicy
    }

    /// The names constraints apply to: the subject (unless empty), its email
    /// addresses (RFC 5280 4.2.1.10: they are rfc822Names too), and the alternative names.
    static func names(of certificate: Certificate) throws -> [GeneralName] {
        var names: [GeneralName] = []
        if !certificate.subject.isEmpty {
            names.append(.directoryName(certificate.subject))
            for relativeName in certificate.subject {
                for attribute in relativeName where attribute.type == emailAddressID {
                    names.append(.rfc822Name(attribute.value.description))
                }
            }
        }
        if let alternatives = try certificate.extensions.subjectAlternativeNames { names += alternatives }
        return names
    }

    private static let emailAddressID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 1]

    /// Why `name` breaks `constraints`, or nil: an excluded subtree contains it,
    /// or permitted subtrees of its form exist and none contains it.
    static func violation(of constraints: NameConstraints, by name: GeneralName) -> String? {
        for excluded in constraints.excludedSubtrees {
            switch Self.relation(of: name, to: excluded) {
            case .within, .overlapping: return "\(name) is excluded by \(excluded)"
            case .incomparable: return "\(name) cannot be checked against the constraint \(excluded)"
            case .outside, .otherForm: continue
            }
        }
        var permittedOfForm = false
        for permitted in constraints.permittedSubtrees {
            switch Self.relation(of: name, to: permitted) {
            case .within: return nil
            case .incomparable: return "\(name) cannot be checked against the constraint \(permitted)"
            case .outside, .overlapping: permittedOfForm = true
            case .otherForm: continue
            }
        }
        return permittedOfForm ? "\(name) is outside the permitted names" : nil
    }

    enum Relation: Equatable {
        case within, outside
        /// A wildcard name some of whose names are within: excluded, not permitted.
        case overlapping
        /// The constraint is about another name form: it says nothing of this name.
        case otherForm
        /// Same form, but we cannot compare values: RFC 5280 then requires rejection.
        case incomparable
    }

    static func relation(of name: GeneralName, to constraint: GeneralName) -> Relation {
        switch (name, constraint) {
        case let (.dnsName(name), .dnsName(base)):
            return dnsRelation(of: name, to: base)
        case let (.ipAddress(address), .ipAddress(subnet)):
            return ipAddress(Array(address.bytes), isWithin: Array(subnet.bytes)) ? .within : .outside
        case let (.rfc822Name(mailbox), .rfc822Name(base)):
            return self.mailbox(mailbox, isWithin: base) ? .within : .outside
        case let (.uniformResourceIdentifier(uri), .uniformResourceIdentifier(base)):
            return uriHost(uri).map { host(_: $0, isWithin: base) } ?? false ? .within : .outside
        case let (.directoryName(name), .directoryName(base)):
            return Array(name).starts(with: Array(base)) ? .within : .outside
        case let (.otherName(name), .otherName(base)):
            return name.typeID == base.typeID ? .incomparable : .otherForm
        case (.x400Address, .x400Address), (.ediPartyName, .ediPartyName), (.registeredID, .registeredID):
            return .incomparable
        default:
            return .otherForm
        }
    }
}

// MARK: - Name forms

extension NameConstraintsPolicy {
    /// RFC 5280: a DNS constraint is satisfied by the name itself and any name
    /// with labels added on the left; an empty constraint by every name; a
    /// leading period (not RFC 5280, but common) by names strictly below.
    /// Malformed names satisfy nothing. A wildcard name stands for every name one
    /// label below its base: within when all of those are ("*.example.com" and
    /// "example.com"), overlapping when one is the constraint ("bar.example.com").
    static func dnsRelation(of name: String, to constraint: String) -> Relation {
        guard let nameLabels = dnsLabels(name, allowingWildcard: true),
            var constraintLabels = dnsLabels(
                constraint.hasSuffix(".") ? String(constraint.dropLast()) : constraint,
                allowingWildcard: false, allowingLeadingPeriod: true)
        else { return .outside }
        let strictlyBelow = constraintLabels.first == ""
        if strictlyBelow { constraintLabels.removeFirst() }
        let name = Array(nameLabels.reversed()), base = Array(constraintLabels.reversed())
        guard name.count >= base.count + (strictlyBelow ? 1 : 0) else { return .outside }
        for index in base.indices where name[index] != base[index] {
            // Only a wildcard may differ, in the constraint's leftmost place: it stands for that label.
            return name[index] == "*" && index == base.count - 1 && name.count == base.count ? .overlapping : .outside
        }
        return .within
    }

    /// Lowercased labels of a host name; nil for anything that is not one: empty
    /// labels, labels over 63 bytes, characters outside letters, digits and
    /// hyphens, a hyphen at a label's edge, an all-numeric last label, or a
    /// wildcard anywhere but as a whole first label.
    static func dnsLabels(_ name: String, allowingWildcard: Bool, allowingLeadingPeriod: Bool = false) -> [Substring]? {
        if name.isEmpty { return [] }
        guard name.utf8.count <= 253 else { return nil }
        let labels = name.lowercased().split(separator: ".", omittingEmptySubsequences: false)
        for (index, label) in labels.enumerated() {
            if label.isEmpty && index == 0 && allowingLeadingPeriod && labels.count > 1 { continue }
            if label == "*" && index == 0 && allowingWildcard && labels.count > 2 { continue }
            guard !label.isEmpty, label.utf8.count <= 63, label.first != "-", label.last != "-",
                label.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
            else { return nil }
        }
        if let last = labels.last, last.allSatisfy(\.isNumber) { return nil }
        return labels
    }

    /// An address is within a subnet (address and mask, RFC 5280) of its own
    /// family whose mask is a CIDR prefix; anything else is within nothing.
    static func ipAddress(_ address: [UInt8], isWithin subnet: [UInt8]) -> Bool {
        guard address.count == 4 || address.count == 16, subnet.count == address.count * 2 else { return false }
        let base = subnet[..<address.count], mask = subnet[address.count...]
        let bits: [Bool] = mask.flatMap { byte in (0..<8).map { (byte << $0) & 0x80 != 0 } }
        guard !bits.drop(while: { $0 }).contains(true) else { return false }
        return zip(zip(address, base), mask).allSatisfy { pair, mask in pair.0 & mask == pair.1 & mask }
    }

    /// The host of a URI with an authority part (`scheme://[user@]host[:port]/…`);
    /// nil without one or when the host is an address — RFC 5280 rejects those
    /// under a URI constraint.
    static func uriHost(_ uri: String) -> String? {
        guard let separator = uri.firstRange(of: "://") else { return nil }
        var authority = uri[separator.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("[") { return nil }
        let host = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard !host.isEmpty, ServerNamePolicy.addressBytes(host) == nil else { return nil }
        return host
    }

    /// URI and rfc822Name constraints name a host ("host.example.com") or, with
    /// a leading period, every host below a domain (".example.com", not the
    /// domain itself); case-insensitively.
    static func host(_ host: String, isWithin constraint: String) -> Bool {
        let host = host.lowercased(), constraint = constraint.lowercased()
        guard dnsLabels(host, allowingWildcard: false) != nil else { return false }
        return constraint.hasPrefix(".") ? host.hasSuffix(constraint) : host == constraint
    }

    /// An rfc822Name constraint is a mailbox ("root@example.com", the whole
    /// address, its host case-insensitively) or a host or domain, as for URIs.
    static func mailbox(_ mailbox: String, isWithin constraint: String) -> Bool {
        guard let at = mailbox.lastIndex(of: "@") else { return false }
        let host = String(mailbox[mailbox.index(after: at)...])
        guard let constraintAt = constraint.lastIndex(of: "@") else { return self.host(host, isWithin: constraint) }
        return mailbox[..<at] == constraint[..<constraintAt]
            && host.lowercased() == constraint[constraint.index(after: constraintAt)...].lowercased()
    }
}
