package auth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// A policy file is the auth file's richer format, YAML (or JSON), chosen
// by the file's extension: .yaml, .yml or .json. It names each credential,
// gives it rules per prefix and quotas, and says how it proves itself:
//
//	credentials:
//	  - name: payments            # logs, metrics and holds name it
//	    tokens: ["…"]             # bearer tokens; several allow rotation
//	    token_sha256: ["…"]       # or their SHA-256, hex, to keep no secret here
//	    certificates:             # client certificates' names (certificate.go)
//	      - uri:spiffe://example.org/payments
//	    rules:                    # the longest prefix of a name decides
//	      "payments.": write
//	      "payments.audit.": read
//	      "shared.": read
//	    quotas: {holds: 500, waiters: 200, sessions: 100, streams: 10, rate: 50, burst: 100}
//	jwt:                          # bearer JWTs whose claim names a credential (jwks.go)
//	  jwks_file: /etc/baton/jwks.json
type policyDoc struct {
	Credentials []credentialDoc `json:"credentials"`
	JWT         *jwtDoc         `json:"jwt"`
}

type credentialDoc struct {
	Name         string            `json:"name"`
	Tokens       []string          `json:"tokens"`
	TokenSHA256  []string          `json:"token_sha256"`
	Certificates []string          `json:"certificates"`
	Rules        map[string]string `json:"rules"`
	Quotas       *Quotas           `json:"quotas"`
}

// UnmarshalJSON reads quotas as a policy file spells them, refusing
// unknown names and negative values.
func (q *Quotas) UnmarshalJSON(b []byte) error {
	var d struct {
		Holds    *int     `json:"holds"`
		Waiters  *int     `json:"waiters"`
		Sessions *int     `json:"sessions"`
		Streams  *int     `json:"streams"`
		Rate     *float64 `json:"rate"`
		Burst    *int     `json:"burst"`
	}
	if err := strictJSON(b, &d); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    *int
		dst  *int
	}{{"holds", d.Holds, &q.Holds}, {"waiters", d.Waiters, &q.Waiters}, {"sessions", d.Sessions, &q.Sessions}, {"streams", d.Streams, &q.Streams}, {"burst", d.Burst, &q.Burst}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 {
			return fmt.Errorf("quota %s must be 0 (none) or more", f.name)
		}
		*f.dst = *f.v
	}
	if d.Rate != nil {
		if *d.Rate < 0 || math.IsNaN(*d.Rate) || math.IsInf(*d.Rate, 0) {
			return fmt.Errorf("quota rate must be 0 (none) or more requests a second")
		}
		q.Rate = *d.Rate
	}
	return nil
}

// IsPolicyFile reports whether path names a policy file (YAML or JSON) by
// its extension, rather than a file of the line format.
func IsPolicyFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// credentialName is what a policy file's credential may be called: what
// a certificate's names and JWT claims usually are, and never an ID of the
// line format.
var credentialName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}$`)

// ParsePolicy reads a policy file (YAML or JSON; see the format above).
// Unknown fields are errors, so a misspelt quota is never silently
// unlimited. Errors name the credential, never a token. A relative
// jwks_file is relative to the working directory; Load reads it relative
// to the policy file's.
func ParsePolicy(r io.Reader) (*Credentials, error) { return parsePolicy(r, "") }

func parsePolicy(r io.Reader, dir string) (*Credentials, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPolicy+1))
	if err != nil {
		return nil, &ParseError{Reason: "read: " + err.Error()}
	}
	if len(b) > maxPolicy {
		return nil, &ParseError{Reason: fmt.Sprintf("longer than %d bytes", maxPolicy)}
	}
	var doc policyDoc
	if err := yaml.UnmarshalStrict(b, &doc); err != nil {
		return nil, &ParseError{Reason: scrub(err.Error())}
	}
	c := newCredentials()
	if doc.JWT != nil {
		// Before the credentials: whether a token has a JWT's form
		// matters only with a jwt: section.
		v, reason := newJWTVerifier(doc.JWT, dir)
		if reason != "" {
			return nil, &ParseError{Reason: "jwt: " + reason}
		}
		c.jwt = v
	}
	for i, d := range doc.Credentials {
		if reason := c.addNamed(d); reason != "" {
			who := fmt.Sprintf("credential %d", i+1)
			if credentialName.MatchString(d.Name) {
				who = fmt.Sprintf("credential %q", d.Name)
			}
			return nil, &ParseError{Reason: who + ": " + reason}
		}
	}
	if len(c.named) == 0 {
		return nil, &ParseError{Reason: "no credentials: every /v1 call would be refused; list them under credentials:"}
	}
	return c, nil
}

// maxPolicy bounds a policy file: ample for thousands of rules.
const maxPolicy = 16 << 20

// scrub keeps a decoder's error from quoting what may be a token: YAML's
// errors can quote a value.
func scrub(msg string) string {
	if i := strings.Index(msg, "`"); i >= 0 {
		msg = msg[:i] + "(value not shown)"
	}
	return msg
}

// addNamed adds the policy file's credential d, or says why it cannot.
func (c *Credentials) addNamed(d credentialDoc) string {
	if !credentialName.MatchString(d.Name) {
		return "name must be 1 to 128 of A-Z a-z 0-9 . _ : @ / + = -, starting with a letter or digit"
	}
	if strings.HasPrefix(d.Name, "cred-") {
		return `name must not start with "cred-", which IDs of the line format use`
	}
	if _, dup := c.named[d.Name]; dup {
		return "the name is given twice"
	}
	if len(d.Rules) == 0 {
		return `no rules: give it at least one, such as "": read`
	}
	rules := make([]Rule, 0, len(d.Rules))
	for p, r := range d.Rules {
		role, ok := ParseRole(r)
		if !ok {
			return fmt.Sprintf("rule %q: the role must be read, write or admin", p)
		}
		rules = append(rules, Rule{Prefix: p, Role: role})
	}
	rs, err := NewRules(rules)
	if err != nil {
		return err.Error()
	}
	cred := &Credential{ID: d.Name, Role: rs.Max(), Rules: rs}
	if d.Quotas != nil {
		cred.Quotas = *d.Quotas
	}
	where := fmt.Sprintf("credential %q", d.Name)
	for i, t := range d.Tokens {
		if err := checkToken(t); err != "" {
			return fmt.Sprintf("token %d: %s", i+1, err)
		}
		if c.jwt != nil && IsJWT(t) {
			return fmt.Sprintf("token %d has a JWT's form, and with jwt: a bearer JWT is checked as one: choose a random token (openssl rand -hex 24)", i+1)
		}
		if reason := c.addToken(where, sha256.Sum256([]byte(t)), cred); reason != "" {
			return fmt.Sprintf("token %d: %s", i+1, reason)
		}
	}
	for i, h := range d.TokenSHA256 {
		sum, err := hex.DecodeString(h)
		if err != nil || len(sum) != sha256.Size {
			return fmt.Sprintf("token_sha256 %d: want the 64 hex digits of a token's SHA-256", i+1)
		}
		if reason := c.addToken(where, [sha256.Size]byte(sum), cred); reason != "" {
			return fmt.Sprintf("token_sha256 %d: %s", i+1, reason)
		}
	}
	if reason := c.addCertificates(cred, d.Certificates); reason != "" {
		return reason
	}
	c.named[d.Name] = cred
	return ""
}

// strictJSON decodes b into v, refusing unknown fields.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
