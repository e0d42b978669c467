package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/baton-dev/baton/tests/chaos/check/scopecheck"
)

// ScopeDriver sends one narrow client's requests, each to the node it
// names, with the client's own credential, and records each as a
// scopecheck.Request with every name its answer gave. Like Driver, it
// never retries.
type ScopeDriver struct {
	Client int
	Bases  []string // every node's URL
	H      *History // the run's clock
	HTTP   *http.Client
	// Stream is the client for event streams: it has no timeout.
	Stream *http.Client
	Log    *ScopeLog
}

// ScopeLog collects the narrow clients' requests.
type ScopeLog struct {
	mu   sync.Mutex
	reqs []scopecheck.Request
}

func (l *ScopeLog) add(r scopecheck.Request) scopecheck.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.ID = len(l.reqs)
	l.reqs = append(l.reqs, r)
	return r
}

// Requests returns a copy of what was recorded.
func (l *ScopeLog) Requests() []scopecheck.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]scopecheck.Request(nil), l.reqs...)
}

// Do sends r (its Method and Path; body, when not nil, as JSON) to node
// and records it with its answer. It returns the record and the answer's
// body.
func (d *ScopeDriver) Do(ctx context.Context, node int, r scopecheck.Request, body any) (scopecheck.Request, []byte) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, d.Bases[node]+r.Path, rd)
	if err != nil {
		panic(err) // the client built a bad URL: a bug in the test
	}
	req.Header.Set("Content-Type", "application/json")
	r.Client, r.Node, r.Call = d.Client, node, d.H.Now()
	resp, err := d.HTTP.Do(req)
	var b []byte
	if err == nil {
		b, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		r.Status = resp.StatusCode
	}
	r.Return = d.H.Now()
	if err != nil {
		r.Err = err.Error()
		return d.Log.add(r), nil
	}
	r = answered(r, b)
	return d.Log.add(r), b
}

// answered fills r's problem fields from a refusal b, and its Seen from
// an answer: a history page's events, and every name any other answer
// gives (namesIn).
func answered(r scopecheck.Request, b []byte) scopecheck.Request {
	if r.Status >= 400 {
		var p struct {
			Code     string          `json:"code"`
			Role     scopecheck.Role `json:"role"`
			Prefixes []string        `json:"prefixes"`
		}
		json.Unmarshal(b, &p)
		r.Code, r.Role, r.Prefixes = p.Code, p.Role, p.Prefixes
	}
	if strings.HasPrefix(r.Path, "/v1/history") && r.Status == http.StatusOK {
		var page struct {
			Events []json.RawMessage `json:"events"`
		}
		json.Unmarshal(b, &page)
		for _, ev := range page.Events {
			r.Seen = append(r.Seen, eventSeen(0, "", ev, false))
		}
		return r
	}
	var v any
	if json.Unmarshal(b, &v) == nil {
		r.Seen = namesIn(v, strings.HasPrefix(r.Path, "/v1/sessions"), r.Seen)
	}
	return r
}

// nameFields are the members of an answer that hold a name, and
// nameLists those that hold a list of names: every thing's name, a
// fenced value's resource, a key, a lock set's names, a session's holds.
var (
	nameFields = []string{"name", "lock", "resource", "key"}
	nameLists  = []string{"set", "names", "locks", "elections", "semaphores", "rwlocks"}
)

// namesIn appends to seen every name v, a decoded answer, gives, at any
// depth; a session's owner is a name too (its name, for the rules), so
// in a session's answer (owners) so is every owner.
func namesIn(v any, owners bool, seen []scopecheck.Seen) []scopecheck.Seen {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			seen = namesIn(e, owners, seen)
		}
	case map[string]any:
		for k, e := range v {
			s, isString := e.(string)
			switch {
			case k == "metadata" || k == "value":
				// The client's own labels and data.
			case isString && (slices.Contains(nameFields, k) || owners && k == "owner"):
				seen = append(seen, scopecheck.Seen{Name: s})
			case slices.Contains(nameLists, k):
				if list, ok := e.([]any); ok {
					for _, n := range list {
						if s, ok := n.(string); ok {
							seen = append(seen, scopecheck.Seen{Name: s})
						}
					}
				}
				seen = namesIn(e, owners, seen)
			default:
				seen = namesIn(e, owners, seen)
			}
		}
	}
	return seen
}

// eventSeen is what an event gives: the Event of a history page or of
// /v1/events, or a key stream's change (keys: {"key",…}, with the type
// and revision its message gives), whose gap is an Event too.
func eventSeen(rev int64, typ string, data []byte, keys bool) scopecheck.Seen {
	var ev struct {
		Revision int64    `json:"revision"`
		Type     string   `json:"type"`
		Kind     string   `json:"kind"`
		Name     string   `json:"name"`
		Lock     string   `json:"lock"`
		Key      string   `json:"key"`
		Set      []string `json:"set"`
	}
	json.Unmarshal(data, &ev)
	s := scopecheck.Seen{Revision: ev.Revision, Type: ev.Type, Kind: ev.Kind, Name: ev.Name, Set: ev.Set}
	if s.Name == "" {
		s.Name = ev.Lock
	}
	if keys && typ != "gap" {
		s.Type, s.Kind, s.Name = typ, "key", ev.Key
	}
	if s.Revision == 0 {
		s.Revision = rev
	}
	return s
}

// OpenStream holds the event stream r names (r.Stream, at r.Path, with
// r.Since as Last-Event-ID when it is not 0) on node until ctx ends or
// the stream does, and records it with every event it gave. It returns
// the record.
func (d *ScopeDriver) OpenStream(ctx context.Context, node int, r scopecheck.Request) scopecheck.Request {
	r.Method, r.Client, r.Node = http.MethodGet, d.Client, node
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.Bases[node]+r.Path, nil)
	if r.Since > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(r.Since, 10))
	}
	r.Call = d.H.Now()
	resp, err := d.Stream.Do(req)
	if err != nil {
		r.Return, r.Err = d.H.Now(), err.Error()
		return d.Log.add(r)
	}
	defer resp.Body.Close()
	r.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		r.Return = d.H.Now()
		return d.Log.add(answered(r, b))
	}
	r.Seen, err = readEvents(resp.Body, r.Stream == scopecheck.StreamKeys)
	r.Return = d.H.Now()
	if err != nil {
		r.Err = err.Error()
	}
	return d.Log.add(r)
}

// readEvents reads Server-Sent Events from body until it ends, and
// returns what each gave; keys: a key stream's.
func readEvents(body io.Reader, keys bool) ([]scopecheck.Seen, error) {
	var seen []scopecheck.Seen
	var id int64
	var typ, data string
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != "" {
				seen = append(seen, eventSeen(id, typ, []byte(data), keys))
			}
			typ, data = "", ""
		case strings.HasPrefix(line, "id: "):
			id, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	return seen, sc.Err()
}
