package auth

import (
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// certKinds are the kinds of a certificate's names that a policy
// credential's certificates: entries ("KIND:VALUE") may list, in the
// order certNames reads them. The kind is part of the entry so that a
// name of one kind never stands in for another: a CommonName, which CAs
// often copy from a request unchecked, never matches a DNS or URI entry.
var certKinds = []string{"uri", "dns", "email", "cn"}

// maxCertName bounds an entry's value; a SPIFFE ID is at most 2048 bytes.
const maxCertName = 2048

// certName reads a certificates: entry into the form certNames gives a
// certificate's names, or says what is wrong with it. DNS names compare
// without regard to case; the other kinds exactly.
func certName(entry string) (name, reason string) {
	kind, value, ok := strings.Cut(entry, ":")
	if !ok || !slices.Contains(certKinds, kind) {
		return "", "want KIND:VALUE with KIND uri, dns, email or cn (uri:spiffe://example.org/payments, dns:payments.example.com, email:ops@example.com, cn:payments)"
	}
	if value == "" || len(value) > maxCertName || strings.IndexFunc(value, unicode.IsControl) >= 0 {
		return "", fmt.Sprintf("the %s name must be 1 to %d bytes without control characters", kind, maxCertName)
	}
	if kind == "dns" {
		value = strings.ToLower(value)
	}
	return kind + ":" + value, ""
}

// certNames are cert's names in certName's form: its URI, DNS and email
// subject alternative names, then its subject's CommonName.
func certNames(cert *x509.Certificate) []string {
	names := make([]string, 0, len(cert.URIs)+len(cert.DNSNames)+len(cert.EmailAddresses)+1)
	for _, u := range cert.URIs {
		names = append(names, "uri:"+u.String())
	}
	for _, d := range cert.DNSNames {
		names = append(names, "dns:"+strings.ToLower(d))
	}
	for _, e := range cert.EmailAddresses {
		names = append(names, "email:"+e)
	}
	if cn := cert.Subject.CommonName; cn != "" {
		names = append(names, "cn:"+cn)
	}
	return names
}

// addCertificates lists cred under each of entries, or says why it
// cannot.
func (c *Credentials) addCertificates(cred *Credential, entries []string) string {
	for i, e := range entries {
		name, reason := certName(e)
		if reason != "" {
			return fmt.Sprintf("certificates %d: %s", i+1, reason)
		}
		if other, dup := c.certs[name]; dup {
			// One certificate name, one credential: otherwise which
			// credential a certificate proves would depend on the order.
			return fmt.Sprintf("certificates %d: %q is listed by credential %q too", i+1, e, other.ID)
		}
		c.certs[name] = cred
	}
	return ""
}

// Certificates is the number of certificate names the credentials list.
func (c *Credentials) Certificates() int { return len(c.certs) }

// Certificate returns the identity a client certificate proves: the
// credential that lists one of its names (certNames) under
// certificates:. A certificate whose names no credential lists, or whose
// names two credentials list, proves nothing. cert must have been
// verified against the client CA; Certificate does not verify it.
func (c *Credentials) Certificate(cert *x509.Certificate) (Identity, error) {
	var found []*Credential
	for _, n := range certNames(cert) {
		if cred, ok := c.certs[n]; ok && !slices.Contains(found, cred) {
			found = append(found, cred)
		}
	}
	subject := cert.Subject.String()
	switch len(found) {
	case 0:
		return Identity{}, &ProofError{Via: ViaCertificate, Subject: subject, Reason: "certificate names no credential",
			Detail: fmt.Sprintf("the client certificate (subject %q) names no credential: list one of its names under a credential's certificates: in the policy file, or send Authorization: Bearer TOKEN", subject)}
	case 1:
		return Identity{Cred: found[0], Via: ViaCertificate, Expires: cert.NotAfter}, nil
	}
	ids := make([]string, len(found))
	for i, cred := range found {
		ids[i] = fmt.Sprintf("%q", cred.ID)
	}
	return Identity{}, &ProofError{Via: ViaCertificate, Subject: subject, Reason: "certificate names several credentials",
		Detail: fmt.Sprintf("the client certificate (subject %q) names several credentials (%s): a certificate must name one", subject, strings.Join(ids, ", "))}
}

// Certificate is Credentials.Certificate over the credentials in force.
func (s *Store) Certificate(cert *x509.Certificate) (Identity, error) {
	return s.cur.Load().Certificate(cert)
}
