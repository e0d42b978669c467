package scopecheck

import (
	"net/http"
	"slices"
	"strings"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// Request is one request of the narrow client, as it saw it: sent once,
// never retried. The driver fills it in; Check reads it.
type Request struct {
	ID     int    `json:"id"`
	Client int    `json:"client"`
	Node   int    `json:"node"`
	Method string `json:"method"`
	Path   string `json:"path"` // with its query
	// Names are what the request acts on or reads one of: a lock's,
	// semaphore's, rwlock's, election's, fenced resource's or key's name,
	// every member of a lock set, a session's owner; none for a list or a
	// page or stream of everything. Need is the role the call needs on
	// each (Check takes at least read for a GET, write for the others).
	Names []string `json:"names,omitempty"`
	Need  Role     `json:"need"`
	// Session marks a request about a session by its ID (Names its
	// owner): a 404 session_not_found is an answer about the ID, which
	// names nothing, when the session has ended.
	Session bool `json:"session,omitempty"`
	// Stream, on one connection of an event stream, names the stream it
	// resumes (StreamEvents, StreamKeys), and Since is the revision it
	// asked to resume after (since, or Last-Event-ID).
	Stream string `json:"stream,omitempty"`
	Since  int64  `json:"since,omitempty"`

	// Call and Return are nanoseconds since the run began; a stream's
	// Return is when it closed.
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
	// Status is the HTTP status, 0 when none came (Err says why); Code,
	// Role and Prefixes a problem's code, the role it says the call needs
	// and the prefixes it says the credential has.
	Status   int      `json:"status,omitempty"`
	Code     string   `json:"code,omitempty"`
	Err      string   `json:"err,omitempty"`
	Role     Role     `json:"role,omitempty"`
	Prefixes []string `json:"prefixes,omitempty"`
	// Seen is every thing the answer named: list entries, a history
	// page's events, a session's owner and holds, the holders a refusal
	// shows, and a stream connection's events.
	Seen []Seen `json:"seen,omitempty"`
}

// The streams a client holds and resumes (Request.Stream).
const (
	StreamEvents = "events"    // GET /v1/events: every event
	StreamKeys   = "kv-events" // GET /v1/kv/events: keys' puts and deletes
)

// Seen is one thing an answer named: a list's or a session's entry (Name,
// and a lock set member's Set), or an event (Revision, Type, Kind, Name,
// Set). A gap event names nothing.
type Seen struct {
	Revision int64    `json:"revision,omitempty"`
	Type     string   `json:"type,omitempty"`
	Kind     string   `json:"kind,omitempty"`
	Name     string   `json:"name,omitempty"`
	Set      []string `json:"set,omitempty"`
}

// names are the names s names.
func (s Seen) names() []string {
	if s.Name == "" {
		return s.Set
	}
	return append([]string{s.Name}, s.Set...)
}

// eventNames are the names ev names: its thing, its lock, its set.
func eventNames(ev check.AuditEvent) []string {
	var names []string
	for _, n := range append([]string{ev.Name, ev.Lock}, ev.Set...) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// need is the role r needs on each of its names: what it says, and at
// least read for a GET and write for anything else.
func (r Request) need() Role {
	if r.Method == http.MethodGet {
		return r.Need.atLeast(Read)
	}
	return r.Need.atLeast(Write)
}

// ok reports whether r was answered 2xx.
func (r Request) ok() bool { return r.Status >= 200 && r.Status < 300 }

// faulted reports whether r got no answer about its names: none at all,
// or an unavailable node's or a limit's (503, 429).
func (r Request) faulted() bool {
	return r.Status == 0 || r.Status == http.StatusServiceUnavailable || r.Status == http.StatusTooManyRequests
}

// Without is events but those about a name under one of prefixes: the
// names a scope workload keeps to itself, whose events its checker reads
// and the other checkers, which know nothing of its requests, do not.
func Without(events []check.AuditEvent, prefixes ...string) []check.AuditEvent {
	var out []check.AuditEvent
	for _, ev := range events {
		if !slices.ContainsFunc(eventNames(ev), func(n string) bool {
			return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(n, p) })
		}) {
			out = append(out, ev)
		}
	}
	return out
}
