package scopecheck

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// Config is what Check holds the run against: the narrow credential's
// name, as the trail's events give it, and its rules.
type Config struct {
	Credential string
	Rules      Rules
}

// Report is what Check found: Problems, one line each, and what it
// counted, which says how much the run checked.
type Report struct {
	Problems []string
	// Requests outside the rules: Refused (403 forbidden), of them
	// ReadOnly on a name a read rule decides (a write it may not make on
	// a name it may read); Faulted
	// (no answer, 503, 429); Gone (session_not_found, about an ended
	// session's ID).
	Refused, ReadOnly, Faulted, Gone int
	// Requests inside the rules answered 2xx: Writes and Reads.
	Writes, Reads int
	// Seen counts the names answers gave it; Streamed the events its
	// streams gave it that name something, and Expected the trail's
	// events the streams' connections had to give it.
	Seen, Streamed, Expected int
	// Trail counts the trail's events of its credential.
	Trail int
}

func (rep *Report) problemf(format string, args ...any) {
	rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...))
}

// Check holds the narrow client's requests against cfg's rules, and the
// settled audit trail events (read with a credential that reads every
// name) against both. See the package's documentation for what it checks.
func Check(reqs []Request, events []check.AuditEvent, cfg Config) Report {
	var rep Report
	for _, r := range reqs {
		rep.request(r, cfg.Rules)
		rep.seen(r, cfg.Rules)
	}
	rep.streams(reqs, events, cfg.Rules)
	rep.trail(events, cfg)
	rep.progress()
	return rep
}

func describe(r Request) string {
	return fmt.Sprintf("request %d (client %d on n%d: %s %s)", r.ID, r.Client, r.Node+1, r.Method, r.Path)
}

func answer(r Request) string {
	if r.Status == 0 {
		return "no answer (" + r.Err + ")"
	}
	return strings.TrimSpace(fmt.Sprintf("%d %s", r.Status, r.Code))
}

// request checks what came of r: a request outside the rules is refused,
// before anything else is looked at, or gets no answer; one inside them
// is never refused as forbidden.
func (rep *Report) request(r Request, rules Rules) {
	need := r.need()
	var outside []string
	for _, n := range r.Names {
		if !rules.Allows(n, need) {
			outside = append(outside, n)
		}
	}
	forbidden := r.Status == http.StatusForbidden && r.Code == "forbidden"
	switch {
	case len(outside) == 0 && r.Status == http.StatusForbidden:
		rep.problemf("%s: answered %s, but its rules give %s on %q", describe(r), answer(r), need, r.Names)
	case len(outside) == 0 && r.ok() && need == Read:
		rep.Reads++
	case len(outside) == 0 && r.ok():
		rep.Writes++
	case len(outside) == 0:
	case r.ok():
		rep.problemf("%s: answered %s, but %q is outside its rules for %s", describe(r), answer(r), outside, need)
	case forbidden:
		rep.Refused++
		if slices.ContainsFunc(outside, func(n string) bool { _, role, ok := rules.Decide(n); return ok && role == Read }) {
			rep.ReadOnly++
		}
		rep.refusal(r, need, rules)
	case r.faulted():
		rep.Faulted++
	case r.Session && r.Status == http.StatusNotFound && r.Code == "session_not_found":
		rep.Gone++
	default:
		rep.problemf("%s: answered %s; outside its rules (%q for %s) it must be refused 403 forbidden before anything else", describe(r), answer(r), outside, need)
	}
}

// refusal checks what a 403 forbidden says: the credential's prefixes,
// when it lists them, and the role the call needs, when it names one.
func (rep *Report) refusal(r Request, need Role, rules Rules) {
	if r.Prefixes != nil && !slices.Equal(r.Prefixes, rules.Prefixes()) {
		rep.problemf("%s: its 403 lists the prefixes %q; the credential's are %q", describe(r), r.Prefixes, rules.Prefixes())
	}
	if r.Role != "" && r.Role != need {
		rep.problemf("%s: its 403 says the call needs %s; it needs %s", describe(r), r.Role, need)
	}
}

// seen checks that nothing r's answer or stream gave names anything the
// rules do not let it read; a violation is one line per request, with
// the first thing that named such a name.
func (rep *Report) seen(r Request, rules Rules) {
	var outside []string
	count, first := 0, ""
	for _, s := range r.Seen {
		names := s.names()
		rep.Seen += len(names)
		if r.Stream != "" && len(names) > 0 {
			rep.Streamed++
		}
		for _, n := range names {
			if rules.Allows(n, Read) {
				continue
			}
			if count++; first == "" {
				first = "an entry"
				if s.Type != "" {
					first = fmt.Sprintf("the %s event at revision %d", s.Type, s.Revision)
				}
				first += fmt.Sprintf(" naming %q", n)
			}
			if !slices.Contains(outside, n) {
				outside = append(outside, n)
			}
		}
	}
	if count > 0 {
		rep.problemf("%s: gave it %d names its rules do not let it read, first %s; the names: %q",
			describe(r), count, first, outside[:min(len(outside), maxNames)])
	}
}

// maxNames is how many names outside the rules a violation lists.
const maxNames = 10

// trail checks that every event of the credential is about names it may
// write: nothing it asked for elsewhere took effect.
func (rep *Report) trail(events []check.AuditEvent, cfg Config) {
	for _, ev := range events {
		if ev.Credential != cfg.Credential {
			continue
		}
		rep.Trail++
		for _, n := range eventNames(ev) {
			if !cfg.Rules.Allows(n, Write) {
				rep.problemf("the trail has an event of %s on %q (%s at revision %d), which its rules do not let it write", cfg.Credential, n, ev.Type, ev.Revision)
			}
		}
	}
}

// progress reports a run that checked too little to mean anything.
func (rep *Report) progress() {
	for _, c := range []struct {
		n    int
		what string
	}{
		{rep.Writes, "no write inside its rules succeeded"},
		{rep.Refused, "no request outside its rules was refused"},
		{rep.ReadOnly, "no write on a name it may only read was refused"},
		{rep.Streamed, "its streams gave it no event about a name"},
		{rep.Trail, "the trail has no event of its credential"},
	} {
		if c.n == 0 {
			rep.problemf("the narrow client checked too little: %s", c.what)
		}
	}
}
