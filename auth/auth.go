package auth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Role is what a credential may do. Roles nest: Admin allows what Write
// allows, and Write what Read allows.
type Role uint8

// The roles, weakest first. The zero Role allows nothing.
const (
	// Read may list and get locks, sessions and fenced values, read the
	// history, follow the event stream, and read /v1/cluster and /metrics.
	Read Role = iota + 1
	// Write may also acquire, renew and release locks, create, renew and
	// delete sessions, and write fenced values.
	Write
	// Admin may also revoke any lock, and act on holds and sessions of
	// other credentials.
	Admin
)

// ParseRole reads a role's name as the auth file spells it.
func ParseRole(s string) (Role, bool) {
	switch s {
	case "read":
		return Read, true
	case "write":
		return Write, true
	case "admin":
		return Admin, true
	}
	return 0, false
}

func (r Role) String() string {
	switch r {
	case Read:
		return "read"
	case Write:
		return "write"
	case Admin:
		return "admin"
	}
	return "none"
}

// Allows reports whether r may do what need may.
func (r Role) Allows(need Role) bool { return need != 0 && r >= need }

// Credential is who a valid token speaks for. It holds nothing secret.
type Credential struct {
	// ID names the credential in logs, metrics, rate limits and the lock
	// engine's ownership checks: its name in a policy file, or, for a
	// line of the line format, "cred-" and the first 12 hex digits of the
	// token's SHA-256, stable across reloads as long as the token is.
	ID string
	// Role is the strongest role of its rules (Rules.Max).
	Role Role
	// Rules say what the credential may do to each name.
	Rules *Rules
	// Quotas bound what it may hold at once, and how fast it may ask.
	Quotas Quotas
}

// Quotas bound one credential's use of a node; 0 is no bound. They come
// on top of the node's own caps.
type Quotas struct {
	// Holds bounds the locks, leaderships, permits and read/write holds
	// the credential holds at once; Waiters its requests waiting in
	// queues; Sessions its sessions; Streams its open event streams.
	Holds, Waiters, Sessions, Streams int
	// Rate is the requests a second it may send on average, Burst at
	// once (0: one second's worth).
	Rate  float64
	Burst int
}

// CredentialID is the ID of the credential whose token is token.
func CredentialID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return idOf(sum)
}

func idOf(sum [sha256.Size]byte) string { return "cred-" + hex.EncodeToString(sum[:6]) }

// Limits of a token.
const (
	// MinTokenLen is the shortest token accepted: shorter ones can be
	// guessed.
	MinTokenLen = 16
	// MaxTokenLen bounds a token, and so an Authorization header worth
	// hashing.
	MaxTokenLen = 4096
	// maxLine bounds a line of the file.
	maxLine = 64 << 10
)

// Sentinel errors of authentication and authorisation, for the HTTP
// server's error table.
var (
	// ErrUnauthorized means the request carries no valid credential:
	// no Authorization header, a malformed one, or an unknown token.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden means the credential is valid but its role does not
	// allow the call; the error is a *RoleError.
	ErrForbidden = errors.New("forbidden")
)

// RoleError says which role a refused call needs.
type RoleError struct {
	Need, Have Role
}

func (e *RoleError) Error() string {
	return fmt.Sprintf("this call needs the %s role; the credential has the %s role", e.Need, e.Have)
}

// Unwrap makes errors.Is(err, ErrForbidden) hold.
func (e *RoleError) Unwrap() error { return ErrForbidden }

// ParseError is a line of an auth file that cannot be used. It never
// quotes the line: any field of it may be a token.
type ParseError struct {
	// Path is the file's path when it was read from a file.
	Path string
	// Line is the 1-based line number; 0 for the file as a whole.
	Line   int
	Reason string
}

func (e *ParseError) Error() string {
	where := "auth file"
	if e.Path != "" {
		where = e.Path
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d: %s", where, e.Line, e.Reason)
	}
	return where + ": " + e.Reason
}

// entry is one credential as the Store keeps it: the digest of its token,
// never the token.
type entry struct {
	digest [sha256.Size]byte
	cred   *Credential
}

// Credentials is a parsed auth file. It holds digests of the tokens only.
type Credentials struct {
	entries []entry
	// named are the policy file's credentials by name, with or without
	// tokens (a certificate or a JWT may name them).
	named map[string]*Credential
	// certs are the credentials by the certificate names they list
	// (certName's form); jwt checks bearer JWTs, nil without a jwt:
	// section.
	certs map[string]*Credential
	jwt   *jwtVerifier
	// seen and ids say where each token digest and credential ID was
	// first given, while parsing.
	seen map[[sha256.Size]byte]string
	ids  map[string]string
}

func newCredentials() *Credentials {
	return &Credentials{named: map[string]*Credential{}, certs: map[string]*Credential{}, seen: map[[sha256.Size]byte]string{}, ids: map[string]string{}}
}

// Len is the number of credentials.
func (c *Credentials) Len() int { return len(c.entries) }

// Count is the number of tokens whose credential's strongest role is r.
func (c *Credentials) Count(r Role) int {
	n := 0
	for _, e := range c.entries {
		if e.cred.Role == r {
			n++
		}
	}
	return n
}

// Named returns the policy file's credential of that name.
func (c *Credentials) Named(name string) (*Credential, bool) {
	cred, ok := c.named[name]
	return cred, ok
}

// Find returns the credential that name names: a policy file's
// credential name, or an ID ("cred-…") of the line format. It serves
// tools (baton auth check), not requests: it is not constant-time.
func (c *Credentials) Find(name string) (*Credential, bool) {
	if cred, ok := c.named[name]; ok {
		return cred, true
	}
	for _, e := range c.entries {
		if e.cred.ID == name {
			return e.cred, true
		}
	}
	return nil, false
}

// Parse reads an auth file in the line format: one "ROLE TOKEN
// [PREFIX…]" a line, "#" comments on lines of their own, blank lines.
// Without prefixes the role holds on every name; with them, only on names
// under them. It fails on the first line that cannot be used, naming its
// number, and on a file without any credential, which would refuse every
// call.
func Parse(r io.Reader) (*Credentials, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	c := newCredentials()
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // a UTF-8 BOM some editors write
		}
		text := strings.TrimSpace(string(line))
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if reason := c.addLine(n, strings.Fields(text)); reason != "" {
			return nil, &ParseError{Line: n, Reason: reason}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &ParseError{Line: n + 1, Reason: fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		return nil, &ParseError{Reason: "read: " + err.Error()}
	}
	if len(c.entries) == 0 {
		return nil, &ParseError{Reason: "no credentials: every /v1 call would be refused; add lines ROLE TOKEN [PREFIX…]"}
	}
	return c, nil
}

// addLine adds the credential of line n's fields, or says why it cannot,
// quoting no field that may be a token.
func (c *Credentials) addLine(n int, fields []string) string {
	if len(fields) < 2 {
		return "want ROLE TOKEN [PREFIX…]; this line has one field"
	}
	role, ok := ParseRole(fields[0])
	if !ok {
		// Not quoted: a line written TOKEN ROLE has the token here.
		return "the first field must be a role: read, write or admin"
	}
	rules := make([]Rule, 0, len(fields)-2)
	for i, p := range fields[2:] {
		if strings.HasPrefix(p, "#") {
			return "comments go on lines of their own"
		}
		if slices.ContainsFunc(rules, func(r Rule) bool { return r.Prefix == p }) {
			return fmt.Sprintf("prefix %d appears twice", i+1)
		}
		rules = append(rules, Rule{Prefix: p, Role: role})
	}
	if len(rules) == 0 {
		rules = append(rules, Rule{Prefix: "", Role: role})
	}
	rs, err := NewRules(rules)
	if err != nil {
		// A prefix may be a token written in the wrong place: the
		// error names the field by position only.
		return "a prefix must be printable ASCII without whitespace, at most 512 bytes"
	}
	token := fields[1]
	if err := checkToken(token); err != "" {
		return err
	}
	sum := sha256.Sum256([]byte(token))
	id := idOf(sum)
	if first, dup := c.ids[id]; dup {
		// Two tokens whose IDs collide would count as one credential
		// in ownership checks and rate limits.
		return fmt.Sprintf("this token's credential ID equals %s's; choose another token", first)
	}
	where := fmt.Sprintf("line %d", n)
	c.ids[id] = where
	return c.addToken(where, sum, &Credential{ID: id, Role: role, Rules: rs})
}

// addToken adds the token whose digest is sum as cred's, given at where,
// or says why it cannot, quoting neither.
func (c *Credentials) addToken(where string, sum [sha256.Size]byte, cred *Credential) string {
	if first, dup := c.seen[sum]; dup {
		return fmt.Sprintf("the same token as %s: every credential needs a token of its own", first)
	}
	c.seen[sum] = where
	c.entries = append(c.entries, entry{digest: sum, cred: cred})
	return ""
}

// checkToken says what is wrong with a token, without quoting it.
func checkToken(t string) string {
	if len(t) < MinTokenLen {
		return fmt.Sprintf("the token is shorter than %d characters", MinTokenLen)
	}
	if len(t) > MaxTokenLen {
		return fmt.Sprintf("the token is longer than %d characters", MaxTokenLen)
	}
	if !printable(t) {
		return "the token must be printable ASCII without whitespace"
	}
	return ""
}

// printable reports whether s is printable ASCII without whitespace, as
// tokens and prefixes must be.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// Store holds the credentials in force. Check is safe for concurrent use
// with Reload and Swap, which replace the whole set at once: a request is
// checked against the old set or the new one, never a mix.
type Store struct {
	path string
	cur  atomic.Pointer[Credentials]

	mu      sync.Mutex // serialises reloads, guards changed
	changed chan struct{}
}

// NewStore returns a store holding c.
func NewStore(c *Credentials) *Store {
	s := &Store{changed: make(chan struct{})}
	s.cur.Store(c)
	return s
}

// Load reads the auth file at path into a new store; Reload reads it again.
func Load(path string) (*Store, error) {
	c, err := parseFile(path)
	if err != nil {
		return nil, err
	}
	s := NewStore(c)
	s.path = path
	return s, nil
}

func parseFile(path string) (*Credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("auth file: %w", err)
	}
	defer f.Close()
	parse := Parse
	if IsPolicyFile(path) {
		parse = func(r io.Reader) (*Credentials, error) { return parsePolicy(r, filepath.Dir(path)) }
	}
	c, err := parse(f)
	var pe *ParseError
	if errors.As(err, &pe) {
		pe.Path = path
	}
	return c, err
}

// Path is the file Load read, "" for a store made by NewStore.
func (s *Store) Path() string { return s.path }

// Reload reads the store's file again and, if it parses, swaps it in; if
// not, the credentials in force stay, and the error names the line.
func (s *Store) Reload() (*Credentials, error) {
	if s.path == "" {
		return nil, errors.New("auth: this store was not loaded from a file")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := parseFile(s.path)
	if err != nil {
		return nil, err
	}
	s.swapLocked(c)
	return c, nil
}

// Swap puts c in force.
func (s *Store) Swap(c *Credentials) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.swapLocked(c)
}

func (s *Store) swapLocked(c *Credentials) {
	s.cur.Store(c)
	close(s.changed)
	s.changed = make(chan struct{})
}

// Changed returns a channel that is closed at the next Reload or Swap, so
// that long requests (an event stream) can check their credential again.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Check returns the credential whose token is token; see Lookup.
func (s *Store) Check(token string) (Credential, bool) {
	if c, ok := s.Lookup(token); ok {
		return *c, true
	}
	return Credential{}, false
}

// Lookup returns the credential whose token is token. It compares the
// token's SHA-256 with every credential's in constant time, and looks at
// all of them whatever matches, so the time it takes tells nothing about
// the tokens it holds. The credential is shared and must not be changed.
//
// Lookup knows listed tokens only; Bearer also checks JWTs.
func (s *Store) Lookup(token string) (*Credential, bool) {
	return s.cur.Load().lookup(token)
}

// Named returns the credential in force named name (a policy file's), for
// credentials proved otherwise than by a token: a client certificate, a
// JWT.
func (s *Store) Named(name string) (*Credential, bool) {
	return s.cur.Load().Named(name)
}

// Current is the credentials in force.
func (s *Store) Current() *Credentials { return s.cur.Load() }
