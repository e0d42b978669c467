package scopecheck

import (
	"maps"
	"slices"
	"strings"
)

// Role is what a rule gives on a name, and what a request needs of it:
// read, write (which reads too) or admin (which writes too).
type Role string

// The roles, weakest first.
const (
	Read  Role = "read"
	Write Role = "write"
	Admin Role = "admin"
)

func (r Role) rank() int { return slices.Index([]Role{Read, Write, Admin}, r) + 1 }

// Allows reports whether r gives need; an unknown role gives nothing.
func (r Role) Allows(need Role) bool { return need.rank() > 0 && r.rank() >= need.rank() }

// atLeast is the stronger of r and o.
func (r Role) atLeast(o Role) Role {
	if o.rank() > r.rank() {
		return o
	}
	return r
}

// Rules are a credential's rules by name prefix, as a policy file gives
// them: of the prefixes a name starts with, the longest decides, and a
// name that none starts with is neither read nor written.
type Rules map[string]Role

// Decide is the rule that decides name, and whether there is one.
func (rs Rules) Decide(name string) (prefix string, role Role, ok bool) {
	for p, r := range rs {
		if strings.HasPrefix(name, p) && (!ok || len(p) > len(prefix)) {
			prefix, role, ok = p, r, true
		}
	}
	return prefix, role, ok
}

// Allows reports whether the rules give need on name.
func (rs Rules) Allows(name string, need Role) bool {
	_, r, ok := rs.Decide(name)
	return ok && r.Allows(need)
}

// Prefixes are the rules' prefixes, sorted, as a 403 forbidden lists them.
func (rs Rules) Prefixes() []string { return slices.Sorted(maps.Keys(rs)) }
