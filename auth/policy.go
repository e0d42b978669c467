package auth

import (
	"fmt"
	"slices"
	"strings"
)

// Rule gives Role on every name that starts with Prefix: the names of
// locks, elections, semaphores, read/write locks, fenced resources and
// keys, and the owners of sessions. The empty prefix is every name.
type Rule struct {
	Prefix string
	Role   Role
}

func (r Rule) String() string { return fmt.Sprintf("%q: %s", r.Prefix, r.Role) }

// MaxPrefixLen bounds a rule's prefix: a key, the longest name, is at
// most 512 bytes.
const MaxPrefixLen = 512

// Rules are a credential's rules, compiled for Decide. Of the rules whose
// prefix a name starts with, the one with the longest prefix decides, as
// Consul's prefix rules do: "team-a.": write with "team-a.audit.": read
// lets the team write its names but only read its audit names. A name no
// rule covers may not be touched, nor seen. Every role allows read, so
// what a credential may see is the union of its prefixes (Readable).
//
// Rules are immutable and safe for concurrent use.
type Rules struct {
	// byPrefix maps each prefix to its role; lens are the prefixes'
	// distinct lengths, longest first, so Decide looks up at most one
	// map entry per length: its cost grows with the lengths in use, not
	// with the number of rules.
	byPrefix map[string]Role
	lens     []int
	// sorted are the rules by prefix, for String and Prefixes.
	sorted []Rule
	// readable are the prefixes that are not under another one, sorted;
	// nil when one of them is "" (everything).
	readable []string
	max      Role
}

// NewRules compiles rules. It fails on a prefix given twice, a role that
// allows nothing, or a prefix that is too long or not printable ASCII.
func NewRules(rules []Rule) (*Rules, error) {
	rs := &Rules{byPrefix: make(map[string]Role, len(rules))}
	for _, r := range rules {
		if err := checkPrefix(r.Prefix); err != "" {
			return nil, fmt.Errorf("prefix %q: %s", r.Prefix, err)
		}
		if r.Role < Read || r.Role > Admin {
			return nil, fmt.Errorf("prefix %q: the role must be read, write or admin", r.Prefix)
		}
		if _, dup := rs.byPrefix[r.Prefix]; dup {
			return nil, fmt.Errorf("prefix %q has two rules: give each prefix one role", r.Prefix)
		}
		rs.byPrefix[r.Prefix] = r.Role
		rs.sorted = append(rs.sorted, r)
		if !slices.Contains(rs.lens, len(r.Prefix)) {
			rs.lens = append(rs.lens, len(r.Prefix))
		}
		rs.max = max(rs.max, r.Role)
	}
	slices.SortFunc(rs.lens, func(a, b int) int { return b - a })
	slices.SortFunc(rs.sorted, func(a, b Rule) int { return strings.Compare(a.Prefix, b.Prefix) })
	for _, r := range rs.sorted {
		if r.Prefix == "" {
			rs.readable = nil
			break
		}
		// Sorted, a prefix's covering prefix comes before it, and is the
		// last kept one if any is.
		if n := len(rs.readable); n > 0 && strings.HasPrefix(r.Prefix, rs.readable[n-1]) {
			continue
		}
		rs.readable = append(rs.readable, r.Prefix)
	}
	return rs, nil
}

// Everything is the rule set of a credential that is not scoped: role on
// the empty prefix.
func Everything(role Role) *Rules {
	rs, _ := NewRules([]Rule{{Prefix: "", Role: role}})
	return rs
}

// checkPrefix says what is wrong with a rule's prefix.
func checkPrefix(p string) string {
	if len(p) > MaxPrefixLen {
		return fmt.Sprintf("longer than %d bytes", MaxPrefixLen)
	}
	if !printable(p) {
		return "must be printable ASCII without whitespace"
	}
	return ""
}

// Decide returns the rule that decides name: the one with the longest
// prefix of name. ok is false when no rule covers name.
func (rs *Rules) Decide(name string) (r Rule, ok bool) {
	for _, n := range rs.lens {
		if n > len(name) {
			continue
		}
		if role, ok := rs.byPrefix[name[:n]]; ok {
			return Rule{Prefix: name[:n], Role: role}, true
		}
	}
	return Rule{}, false
}

// Allows reports whether the rules give need on name.
func (rs *Rules) Allows(name string, need Role) bool {
	r, ok := rs.Decide(name)
	return ok && r.Role.Allows(need)
}

// Check is nil when the rules give need on name, and otherwise a
// *ScopeError saying why not.
func (rs *Rules) Check(name string, need Role) error {
	r, ok := rs.Decide(name)
	if ok && r.Role.Allows(need) {
		return nil
	}
	e := &ScopeError{Name: name, Need: need, rules: rs}
	if ok {
		e.Rule = &r
	}
	return e
}

// Max is the strongest role of any rule: what a route that names nothing
// is checked against (read: /v1/cluster; write: creating a session).
func (rs *Rules) Max() Role { return rs.max }

// Global reports whether the rules give need on every name: a rule on the
// empty prefix that allows it, and no longer prefix that allows less.
// Calls that act across names (maintenance, another credential's session)
// need it.
func (rs *Rules) Global(need Role) bool {
	for _, r := range rs.sorted {
		if !r.Role.Allows(need) {
			return false
		}
	}
	role, ok := rs.byPrefix[""]
	return ok && role.Allows(need)
}

// Prefixes are the rules' prefixes, sorted.
func (rs *Rules) Prefixes() []string {
	out := make([]string, len(rs.sorted))
	for i, r := range rs.sorted {
		out[i] = r.Prefix
	}
	return out
}

// List are the rules, sorted by prefix.
func (rs *Rules) List() []Rule { return slices.Clone(rs.sorted) }

// Readable are the prefixes whose names the rules let a credential see,
// none under another, sorted; all is true when they are every name.
func (rs *Rules) Readable() (prefixes []string, all bool) {
	if _, ok := rs.byPrefix[""]; ok {
		return nil, true
	}
	return rs.readable, false
}

// Equal reports whether rs and o are the same rules.
func (rs *Rules) Equal(o *Rules) bool { return slices.Equal(rs.sorted, o.sorted) }

// String lists the rules, sorted by prefix.
func (rs *Rules) String() string {
	parts := make([]string, len(rs.sorted))
	for i, r := range rs.sorted {
		parts[i] = r.String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Len is the number of rules.
func (rs *Rules) Len() int { return len(rs.sorted) }

// ScopeError is a refusal by a credential's rules: no rule covers Name,
// or the one that does (Rule) gives less than Need. It unwraps to
// ErrForbidden.
type ScopeError struct {
	Name  string
	Need  Role
	Rule  *Rule
	rules *Rules
}

// Prefixes are the prefixes of the credential's rules: what it may touch.
func (e *ScopeError) Prefixes() []string { return e.rules.Prefixes() }

func (e *ScopeError) Error() string {
	if e.Rule != nil {
		return fmt.Sprintf("%q needs the %s role; this credential's rule %s decides it", e.Name, e.Need, e.Rule)
	}
	return fmt.Sprintf("%q is outside this credential's prefixes (%s)", e.Name, quoteAll(e.Prefixes()))
}

// Unwrap makes errors.Is(err, ErrForbidden) hold.
func (e *ScopeError) Unwrap() error { return ErrForbidden }

// RuleName is the deciding rule's prefix, quoted, or "none": how metrics
// count denials by rule.
func (e *ScopeError) RuleName() string {
	if e.Rule == nil {
		return "none"
	}
	return fmt.Sprintf("%q", e.Rule.Prefix)
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
