package chaos

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
	"github.com/baton-dev/baton/tests/chaos/check/scopecheck"
)

// The scope workload: narrow clients, whose credential may write names
// under n. and read those under shared. (narrowRules), beside the others
// and under the same nemesis. Each turn, on a random node, a client takes
// and ends holds of its own names of every kind, or tries to act on or
// read the other clients' names and the shared writer's (which must be
// refused), or lists every kind a few entries a page, following cursors,
// or reads history pages. Two more hold the event streams from the run's
// start, moving from node to node and resuming with Last-Event-ID. A
// shared writer with the operator's credential writes names under
// shared., so that there is something there to read and to be refused.
// Package scopecheck checks what they did and saw.

var flagNarrow = flag.Int("chaos.narrow", 1, "concurrent narrow clients, whose credential may write names under n. and read those under shared., beside the others; with two stream holders and a writer of the shared names (0: none)")

// names are a scope's names of each kind; owners are sessions' owners.
type names struct {
	locks, sems, rws, votes, keys, owners []string
}

// scope is the scope workload's state.
type scope struct {
	log *ScopeLog
	// own are the narrow clients' names, shared the shared writer's,
	// others the other clients'; set are the narrow clients' lock set
	// pool.
	own, shared, others names
	set                 []string

	mu sync.Mutex
	// foreign is the latest session the shared writer made with an
	// owner outside the narrow rules, and its owner; listed the owners of
	// the sessions of the last page of sessions a narrow client read, by
	// ID.
	foreign, foreignOwner string
	listed                map[string]string
}

func newScope(r *run) *scope {
	s := &scope{log: &ScopeLog{}, listed: map[string]string{}}
	mine := func(p string) names {
		return names{
			locks: []string{p + "lock-0", p + "lock-1", p + "lock-2"}, sems: []string{p + "sem-0"}, rws: []string{p + "rw-0"},
			votes: []string{p + "vote-0"}, keys: []string{p + "cfg/0", p + "cfg/1"}, owners: []string{p + "feeder"},
		}
	}
	s.own, s.shared = mine(narrowPrefix), mine(sharedPrefix)
	s.set = []string{narrowPrefix + "set-0", narrowPrefix + "set-1", narrowPrefix + "set-2"}
	s.others = names{
		locks: append(append(append([]string{}, r.locks...), r.pool...), kvFence), rws: rwlocks,
		votes: r.elections, keys: append(append([]string{}, r.keys...), kvEndKey), owners: []string{"c0-1", "kv0-1", "st0-1"},
	}
	for _, sem := range r.sems {
		s.others.sems = append(s.others.sems, sem.name)
	}
	return s
}

// startScope starts the narrow clients, their stream holders and the
// shared writer, which stop when ctx ends.
func (r *run) startScope(ctx context.Context, wg *sync.WaitGroup, seed uint64) {
	if *flagNarrow == 0 {
		return
	}
	r.scope = newScope(r)
	start := func(stream uint64, f func(*rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(rand.New(rand.NewPCG(seed, 1<<32+stream)))
		}()
	}
	for i := range *flagNarrow {
		start(uint64(i), func(rng *rand.Rand) { r.narrowClient(ctx, i, rng) })
	}
	for i, stream := range []string{scopecheck.StreamEvents, scopecheck.StreamKeys} {
		id := *flagNarrow + i
		start(uint64(id), func(rng *rand.Rand) { r.narrowStream(ctx, id, stream, rng) })
	}
	start(uint64(*flagNarrow+2), func(rng *rand.Rand) { r.sharedWriter(ctx, rng) })
}

func (r *run) scopeDriver(id int) *ScopeDriver {
	d := &ScopeDriver{Client: id, H: r.h, HTTP: newHTTPClientAs(narrowToken), Log: r.scope.log,
		Stream: &http.Client{Transport: bearer(narrowToken, &http.Transport{})}}
	for _, n := range r.c.Nodes {
		d.Bases = append(d.Bases, n.URL())
	}
	return d
}

// call is one turn of a narrow client: its requests go to random nodes.
type call struct {
	ctx context.Context
	d   *ScopeDriver
	rng *rand.Rand
	me  string // the turn's owner label
}

// do sends one request about names, which needs need on each of them.
func (c call) do(method, path string, need scopecheck.Role, names []string, body any) (scopecheck.Request, []byte) {
	return c.d.Do(c.ctx, c.rng.IntN(len(c.d.Bases)), scopecheck.Request{Method: method, Path: path, Need: need, Names: names}, body)
}

func (c call) pick(list []string) string { return list[c.rng.IntN(len(list))] }

func succeeded(r scopecheck.Request) bool { return r.Status >= 200 && r.Status < 300 }

// tokenOf is the token an answer gives.
func tokenOf(b []byte) int64 {
	var t struct {
		Token int64 `json:"token"`
	}
	json.Unmarshal(b, &t)
	return t.Token
}

// narrowClient is one narrow client: each turn, it works with its own
// names, tries the others' and the shared ones, lists or reads history.
func (r *run) narrowClient(ctx context.Context, id int, rng *rand.Rand) {
	d := r.scopeDriver(id)
	// Requests already sent run to their end, as the other clients'.
	rctx := context.WithoutCancel(ctx)
	for seq := 0; ctx.Err() == nil; seq++ {
		c := call{ctx: rctx, d: d, rng: rng, me: fmt.Sprintf("nc%d-%d", id, seq)}
		switch x := rng.IntN(100); {
		case x < 40:
			r.scope.ownTurn(c, id)
		case x < 75:
			r.scope.foreignTurn(c)
		case x < 92:
			r.scope.list(c)
		default:
			r.scope.history(c)
		}
		pace(ctx, rng, 60*time.Millisecond)
	}
}

// ownTurn takes and ends a hold of one of the client's own names.
func (s *scope) ownTurn(c call, id int) {
	switch c.rng.IntN(6) {
	case 0:
		s.ownLock(c)
	case 1:
		name := c.pick(s.own.sems)
		s.ownHold(c, name, semaphorePath(name, ""), map[string]any{"limit": 2})
	case 2:
		name := c.pick(s.own.rws)
		s.ownHold(c, name, rwlockPath(name, ""), map[string]any{"mode": c.pick([]string{"read", "write"})})
	case 3:
		s.ownElection(c)
	case 4:
		s.ownKey(c, id)
	default:
		s.ownSet(c)
	}
}

// ownLock takes one of its locks (waiting a quarter of the time), writes
// its fenced resource, renews and reads it, asks to revoke it (an
// admin's call: refused), and releases it or, one time in ten, abandons
// it to its TTL.
func (s *scope) ownLock(c call) {
	name := c.pick(s.own.locks)
	n, path := []string{name}, lockPath(name)
	body := map[string]any{"owner": c.me, "ttl": ttl.String()}
	if c.rng.IntN(4) == 0 {
		body["wait"] = "500ms"
	}
	a, b := c.do(http.MethodPost, path, scopecheck.Write, n, body)
	if !succeeded(a) {
		return
	}
	tok := tokenOf(b)
	c.do(http.MethodPut, "/v1/fenced/"+url.PathEscape(name), scopecheck.Write, n, map[string]any{"token": tok, "value": c.me})
	if c.rng.IntN(2) == 0 {
		c.do(http.MethodPost, path+"/renew", scopecheck.Write, n, map[string]any{"token": tok})
		c.do(http.MethodGet, path, scopecheck.Read, n, nil)
		c.do(http.MethodGet, "/v1/fenced/"+url.PathEscape(name), scopecheck.Read, n, nil)
	}
	if c.rng.IntN(5) == 0 {
		c.do(http.MethodPost, path+"/revoke", scopecheck.Admin, n, map[string]any{})
	}
	if c.rng.IntN(10) > 0 {
		c.do(http.MethodDelete, fmt.Sprintf("%s?token=%d", path, tok), scopecheck.Write, n, nil)
	}
}

// ownHold takes a permit or an rwlock hold of name at path, with body's
// limit or mode, renews and reads it, and gives it back.
func (s *scope) ownHold(c call, name, path string, body map[string]any) {
	n := []string{name}
	body["owner"], body["ttl"] = c.me, ttl.String()
	a, b := c.do(http.MethodPost, path, scopecheck.Write, n, body)
	if !succeeded(a) {
		return
	}
	tok := tokenOf(b)
	c.do(http.MethodPost, path+"/renew", scopecheck.Write, n, map[string]any{"token": tok})
	c.do(http.MethodGet, path, scopecheck.Read, n, nil)
	c.do(http.MethodDelete, fmt.Sprintf("%s?token=%d", path, tok), scopecheck.Write, n, nil)
}

// ownElection campaigns in its election, and while it leads proclaims,
// reads the leader and resigns.
func (s *scope) ownElection(c call) {
	name := c.pick(s.own.votes)
	n := []string{name}
	a, b := c.do(http.MethodPost, electionPath(name, "/campaign"), scopecheck.Write, n,
		map[string]any{"candidate": c.me, "value": c.me, "ttl": ttl.String()})
	if !succeeded(a) {
		return
	}
	tok := tokenOf(b)
	c.do(http.MethodPost, electionPath(name, "/proclaim"), scopecheck.Write, n, map[string]any{"token": tok, "value": c.me + "-p"})
	c.do(http.MethodGet, electionPath(name, ""), scopecheck.Read, n, nil)
	c.do(http.MethodDelete, electionPath(name, fmt.Sprintf("/leader?token=%d", tok)), scopecheck.Write, n, nil)
}

// ownKey reads, puts or deletes one of its keys, puts one fenced by one
// of its locks, or binds one to a session of its own (owner under n.)
// that it then deletes or abandons.
func (s *scope) ownKey(c call, id int) {
	key := c.pick(s.own.keys)
	n := []string{key}
	value := map[string]any{"value": c.me}
	switch c.rng.IntN(5) {
	case 0:
		c.do(http.MethodGet, keyPath(key), scopecheck.Read, n, nil)
	case 1:
		c.do(http.MethodPut, keyPath(key), scopecheck.Write, n, value)
	case 2:
		c.do(http.MethodDelete, keyPath(key), scopecheck.Write, n, nil)
	case 3:
		lock := c.pick(s.own.locks)
		a, b := c.do(http.MethodPost, lockPath(lock), scopecheck.Write, []string{lock}, map[string]any{"owner": c.me, "ttl": ttl.String()})
		if succeeded(a) {
			value["lock"], value["token"] = lock, tokenOf(b)
			c.do(http.MethodPut, keyPath(key), scopecheck.Write, []string{key, lock}, value)
			c.do(http.MethodDelete, fmt.Sprintf("%s?token=%d", lockPath(lock), tokenOf(b)), scopecheck.Write, []string{lock}, nil)
		}
	default:
		owner := fmt.Sprintf("%sw%d", narrowPrefix, id)
		a, b := c.do(http.MethodPost, "/v1/sessions", scopecheck.Write, []string{owner}, map[string]any{"owner": owner, "ttl": ttl.String()})
		var sess struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(b, &sess); !succeeded(a) || sess.ID == "" {
			return
		}
		value["session"] = sess.ID
		c.do(http.MethodPut, keyPath(key), scopecheck.Write, n, value)
		c.do(http.MethodGet, sessionPath(sess.ID, ""), scopecheck.Read, []string{owner}, nil)
		if c.rng.IntN(3) > 0 {
			c.do(http.MethodDelete, sessionPath(sess.ID, ""), scopecheck.Write, []string{owner}, nil)
		}
	}
}

// ownSet takes two locks of its set pool at once, in a random order,
// renews them and releases them.
func (s *scope) ownSet(c call) {
	perm := c.rng.Perm(len(s.set))
	set := []string{s.set[perm[0]], s.set[perm[1]]}
	a, b := c.do(http.MethodPost, "/v1/locksets", scopecheck.Write, set, map[string]any{"names": set, "owner": c.me, "ttl": ttl.String()})
	if !succeeded(a) {
		return
	}
	tok := tokenOf(b)
	c.do(http.MethodPost, "/v1/locksets/renew", scopecheck.Write, set, map[string]any{"names": set, "token": tok})
	c.do(http.MethodPost, "/v1/locksets/release", scopecheck.Write, set, map[string]any{"names": set, "token": tok})
}

// foreignTurn tries one thing on a name outside the client's rules or
// under shared. (where it may read, but not write): every write must be
// refused, and so must every read outside.
func (s *scope) foreignTurn(c call) {
	outside := c.rng.IntN(2) == 0
	ns := s.shared
	if outside {
		ns = s.others
	}
	tok := 1 + c.rng.Int64N(1<<20) // a token it never held
	switch c.rng.IntN(9) {
	case 0:
		s.foreignLock(c, c.pick(ns.locks), tok)
	case 1:
		sem := c.pick(ns.sems)
		s.foreignHold(c, sem, semaphorePath(sem, ""), map[string]any{"limit": 2}, tok)
	case 2:
		rw := c.pick(ns.rws)
		s.foreignHold(c, rw, rwlockPath(rw, ""), map[string]any{"mode": "read"}, tok)
	case 3:
		s.foreignElection(c, c.pick(ns.votes), tok, outside)
	case 4:
		key := c.pick(ns.keys)
		n := []string{key}
		c.do(http.MethodPut, keyPath(key), scopecheck.Write, n, map[string]any{"value": c.me})
		c.do(http.MethodGet, keyPath(key), scopecheck.Read, n, nil)
		c.do(http.MethodDelete, keyPath(key), scopecheck.Write, n, nil)
	case 5:
		// A set with one of its own locks: each member is checked.
		set := []string{c.pick(s.set), c.pick(ns.locks)}
		c.do(http.MethodPost, "/v1/locksets", scopecheck.Write, set, map[string]any{"names": set, "owner": c.me, "ttl": ttl.String()})
		c.do(http.MethodPost, "/v1/locksets/release", scopecheck.Write, set, map[string]any{"names": set, "token": tok})
	case 6:
		s.foreignSession(c, c.pick(ns.owners))
	case 7:
		s.foreignView(c, ns, outside)
	default:
		s.sharedSession(c)
	}
}

// foreignLock acquires, renews, releases, writes and reads lock, and its
// fenced resource, asking to revoke it too.
func (s *scope) foreignLock(c call, lock string, tok int64) {
	n, path, fenced := []string{lock}, lockPath(lock), "/v1/fenced/"+url.PathEscape(lock)
	c.do(http.MethodPost, path, scopecheck.Write, n, map[string]any{"owner": c.me, "ttl": ttl.String()})
	c.do(http.MethodPost, path+"/renew", scopecheck.Write, n, map[string]any{"token": tok})
	c.do(http.MethodDelete, fmt.Sprintf("%s?token=%d", path, tok), scopecheck.Write, n, nil)
	c.do(http.MethodPut, fenced, scopecheck.Write, n, map[string]any{"token": tok, "value": c.me})
	c.do(http.MethodPost, path+"/revoke", scopecheck.Admin, n, map[string]any{})
	c.do(http.MethodGet, path, scopecheck.Read, n, nil)
	c.do(http.MethodGet, fenced, scopecheck.Read, n, nil)
}

// foreignHold acquires, renews, releases and reads the semaphore or
// rwlock name at path.
func (s *scope) foreignHold(c call, name, path string, body map[string]any, tok int64) {
	n := []string{name}
	body["owner"], body["ttl"] = c.me, ttl.String()
	c.do(http.MethodPost, path, scopecheck.Write, n, body)
	c.do(http.MethodPost, path+"/renew", scopecheck.Write, n, map[string]any{"token": tok})
	c.do(http.MethodDelete, fmt.Sprintf("%s?token=%d", path, tok), scopecheck.Write, n, nil)
	c.do(http.MethodGet, path, scopecheck.Read, n, nil)
}

// foreignElection campaigns, proclaims, resigns and reads the leader of
// election, and observes it when it is outside (under shared. the
// observation is a read it may make, which would last).
func (s *scope) foreignElection(c call, election string, tok int64, outside bool) {
	n := []string{election}
	c.do(http.MethodPost, electionPath(election, "/campaign"), scopecheck.Write, n, map[string]any{"candidate": c.me, "ttl": ttl.String()})
	c.do(http.MethodPost, electionPath(election, "/proclaim"), scopecheck.Write, n, map[string]any{"token": tok, "value": c.me})
	c.do(http.MethodDelete, electionPath(election, fmt.Sprintf("/leader?token=%d", tok)), scopecheck.Write, n, nil)
	c.do(http.MethodGet, electionPath(election, ""), scopecheck.Read, n, nil)
	if outside {
		s.oneShotStream(c, electionPath(election, "/observe"), n)
	}
}

// oneShotStream opens the stream at path about names outside the rules:
// it must be refused, and is cut off after 2 s when it is not.
func (s *scope) oneShotStream(c call, path string, names []string) {
	ctx, cancel := context.WithTimeout(c.ctx, 2*time.Second)
	defer cancel()
	c.d.Do(ctx, c.rng.IntN(len(c.d.Bases)), scopecheck.Request{Method: http.MethodGet, Path: path, Need: scopecheck.Read, Names: names}, nil)
}

// foreignSession creates a session with owner, and acts on the shared
// writer's latest session whose owner is outside the rules: it reads,
// renews and deletes it, and acquires one of its own locks in it.
func (s *scope) foreignSession(c call, owner string) {
	c.do(http.MethodPost, "/v1/sessions", scopecheck.Write, []string{owner}, map[string]any{"owner": owner, "ttl": ttl.String()})
	s.mu.Lock()
	id, owner := s.foreign, s.foreignOwner
	s.mu.Unlock()
	if id == "" {
		return
	}
	send := func(method, path string, need scopecheck.Role, names []string, body any) {
		c.d.Do(c.ctx, c.rng.IntN(len(c.d.Bases)), scopecheck.Request{Method: method, Path: path, Need: need, Names: names, Session: true}, body)
	}
	send(http.MethodGet, sessionPath(id, ""), scopecheck.Read, []string{owner}, nil)
	send(http.MethodPost, sessionPath(id, "/renew"), scopecheck.Write, []string{owner}, map[string]any{})
	lock := c.pick(s.own.locks)
	send(http.MethodPost, lockPath(lock), scopecheck.Write, []string{lock, owner}, map[string]any{"owner": c.me, "session": id})
	send(http.MethodDelete, sessionPath(id, ""), scopecheck.Write, []string{owner}, nil)
}

// sharedSession reads a session a list showed it (under shared.: one of
// the shared writer's, holding shared locks).
func (s *scope) sharedSession(c call) {
	s.mu.Lock()
	var id, owner string
	for id, owner = range s.listed {
		break
	}
	s.mu.Unlock()
	if id != "" {
		c.d.Do(c.ctx, c.rng.IntN(len(c.d.Bases)), scopecheck.Request{Method: http.MethodGet, Path: sessionPath(id, ""),
			Need: scopecheck.Read, Names: []string{owner}, Session: true}, nil)
	}
}

// foreignView reads the history of one of ns's names, and, outside,
// opens an event stream of one.
func (s *scope) foreignView(c call, ns names, outside bool) {
	lock, key := c.pick(ns.locks), c.pick(ns.keys)
	c.do(http.MethodGet, "/v1/history?limit=5&lock="+url.QueryEscape(lock), scopecheck.Read, []string{lock}, nil)
	c.do(http.MethodGet, "/v1/history?limit=5&kind=key&name="+url.QueryEscape(key), scopecheck.Read, []string{key}, nil)
	if outside {
		sem := c.pick(ns.sems)
		s.oneShotStream(c, "/v1/events?lock="+url.QueryEscape(lock), []string{lock})
		s.oneShotStream(c, "/v1/events?kind=semaphore&name="+url.QueryEscape(sem), []string{sem})
	}
}

// The lists a narrow client pages through, and the prefixes it asks for:
// its own, the shared one, the other clients', and ones that span them.
var (
	scopeLists    = []string{"/v1/locks", "/v1/elections", "/v1/semaphores", "/v1/rwlocks", "/v1/kv", "/v1/sessions"}
	scopePrefixes = []string{"", "", narrowPrefix, sharedPrefix, "chaos-", "cfg/", "s", "n"}
)

// list pages through one list, 1 to 3 entries a page, up to 5 pages,
// and keeps the sessions it shows for sharedSession.
func (s *scope) list(c call) {
	list, prefix := c.pick(scopeLists), c.pick(scopePrefixes)
	cursor := ""
	for range 5 {
		q := url.Values{"limit": {strconv.Itoa(1 + c.rng.IntN(3))}}
		if prefix != "" {
			q.Set("prefix", prefix)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r, b := c.do(http.MethodGet, list+"?"+q.Encode(), scopecheck.Read, nil, nil)
		var page struct {
			Next     string `json:"next_cursor"`
			Sessions []struct {
				ID    string `json:"id"`
				Owner string `json:"owner"`
			} `json:"sessions"`
		}
		if json.Unmarshal(b, &page); !succeeded(r) || page.Next == "" {
			return
		}
		if len(page.Sessions) > 0 {
			s.mu.Lock()
			s.listed = map[string]string{}
			for _, sess := range page.Sessions {
				s.listed[sess.ID] = sess.Owner
			}
			s.mu.Unlock()
		}
		cursor = page.Next
	}
}

// history reads up to 3 pages of the trail, 5 to 20 events a page, and
// now and then the history of one of its own or the shared names.
func (s *scope) history(c call) {
	if c.rng.IntN(4) == 0 {
		name := c.pick(append(append([]string{}, s.own.locks...), s.shared.locks...))
		c.do(http.MethodGet, "/v1/history?kind=lock&name="+url.QueryEscape(name), scopecheck.Read, []string{name}, nil)
		return
	}
	var before int64
	for range 3 {
		q := url.Values{"limit": {strconv.Itoa(5 + c.rng.IntN(16))}}
		if before > 0 {
			q.Set("before", strconv.FormatInt(before, 10))
		}
		r, b := c.do(http.MethodGet, "/v1/history?"+q.Encode(), scopecheck.Read, nil, nil)
		var page struct {
			Next int64 `json:"next_before"`
		}
		if json.Unmarshal(b, &page); !succeeded(r) || page.Next == 0 {
			return
		}
		before = page.Next
	}
}

// narrowStream holds stream (every event, or the keys' changes) with the
// narrow credential from the run's start: on a random node for 1 to 5 s
// at a time, then on another, or at once when its node fails it. Each
// connection resumes with Last-Event-ID one before the last revision the
// stream gave, as that revision's events may have been cut short; the
// repeats cost nothing, and scopecheck checks that no event is missing.
func (r *run) narrowStream(ctx context.Context, id int, stream string, rng *rand.Rand) {
	d := r.scopeDriver(id)
	path := "/v1/events"
	if stream == scopecheck.StreamKeys {
		path = "/v1/kv/events"
	}
	var since int64
	for ctx.Err() == nil {
		req := scopecheck.Request{Stream: stream, Path: path, Since: since}
		if since == 0 {
			req.Path += "?since=0"
		}
		hctx, cancel := context.WithTimeout(ctx, time.Second+time.Duration(rng.Int64N(int64(4*time.Second))))
		got := d.OpenStream(hctx, rng.IntN(len(d.Bases)), req)
		cancel()
		for _, s := range got.Seen {
			since = max(since, s.Revision-1)
		}
		if !succeeded(got) {
			pace(ctx, rng, 300*time.Millisecond) // its node is down or cut off
		}
	}
}

// sharedWriter writes names under shared. with the operator's
// credential, so that the narrow clients have something to read there
// and to be refused writing: holds of every kind, lock sets, keys, and
// sessions, one with an owner under shared. that holds a shared lock,
// one with an owner outside, which the narrow clients act on
// (foreignSession). Its ops are not in the run's history: the other
// checkers know nothing of its names.
//
// Its sets and its shared session keep to names under shared.: a reader
// of one member of a set is shown all of them (a lock's set, an event's
// set), and a reader of a session all its holds, whatever their
// prefixes, which scopecheck would report as names outside the rules.
func (r *run) sharedWriter(ctx context.Context, rng *rand.Rand) {
	d := &Driver{Client: -1, TTL: ttl, H: NewHistory(), HTTP: NewHTTPClient()}
	rctx := context.WithoutCancel(ctx)
	sh := r.scope.shared
	for seq := 0; ctx.Err() == nil; seq++ {
		d.Node = rng.IntN(len(r.c.Nodes))
		d.Base = r.c.Nodes[d.Node].URL()
		me := fmt.Sprintf("w-%d", seq)
		switch rng.IntN(7) {
		case 0:
			if a := d.Acquire(rctx, sh.locks[rng.IntN(2)], me); a.Result == check.OK {
				d.FPut(rctx, a.Lock, a.OutToken, me)
				d.Release(rctx, a.Lock, a.OutToken)
			}
		case 1:
			d.PutKey(rctx, sh.keys[rng.IntN(len(sh.keys))], fmt.Sprintf("%q", me), KeyWrite{})
		case 2:
			if a := d.AcquirePermit(rctx, sh.sems[0], me, 2, 0); a.Result == check.OK {
				d.ReleasePermit(rctx, sh.sems[0], a.OutToken)
			}
		case 3:
			if a := d.AcquireRW(rctx, sh.rws[0], me, "read", 0); a.Result == check.OK {
				d.ReleaseRW(rctx, sh.rws[0], a.OutToken)
			}
		case 4:
			if a := d.Campaign(rctx, sh.votes[0], me, me, 0); a.Result == check.OK {
				d.Resign(rctx, sh.votes[0], a.OutToken)
			}
		case 5:
			set := []string{sh.locks[1], sh.locks[0]}
			if a := d.AcquireSet(rctx, set, me, 0); a.Result == check.OK {
				d.ReleaseSet(rctx, set, a.OutToken)
			}
		default:
			r.sharedSessions(ctx, d, rng, seq)
		}
		pace(ctx, rng, 200*time.Millisecond)
	}
}

// sharedSessions makes a session of an owner under shared. holding the
// last shared lock, and one of an owner outside the narrow rules, which
// it offers the narrow clients; it deletes both after a while, or one
// time in three lets them expire.
func (r *run) sharedSessions(ctx context.Context, d *Driver, rng *rand.Rand, seq int) {
	rctx := context.WithoutCancel(ctx)
	sh := r.scope.shared
	mine := d.CreateSession(rctx, sh.owners[0])
	if mine.Result == check.OK {
		d.AcquireInSession(rctx, sh.locks[len(sh.locks)-1], "w-session", mine.Session)
	}
	owner := fmt.Sprintf("feeder-%d", seq)
	theirs := d.CreateSession(rctx, owner)
	if theirs.Result == check.OK {
		r.scope.mu.Lock()
		r.scope.foreign, r.scope.foreignOwner = theirs.Session, owner
		r.scope.mu.Unlock()
	}
	pace(ctx, rng, 2*time.Second) // the sessions' work: the workload's pace, inside their TTL
	if rng.IntN(3) == 0 {
		return
	}
	for _, s := range []check.Op{mine, theirs} {
		if s.Result == check.OK {
			d.DeleteSession(rctx, s.Session)
		}
	}
}

// checkScope checks what the narrow clients did and saw against their
// rules and the whole settled trail, and says how much it checked.
func (r *run) checkScope(events []check.AuditEvent) {
	if *flagNarrow == 0 {
		return
	}
	reqs := r.scope.log.Requests()
	if b, err := json.MarshalIndent(reqs, "", " "); err == nil {
		os.WriteFile(filepath.Join(r.dir, "scope.json"), b, 0o644)
	}
	rep := scopecheck.Check(reqs, events, scopecheck.Config{Credential: narrowCredential, Rules: narrowRules})
	r.logf("narrow clients: %d requests; outside their rules %d refused (%d writes on names they may only read), %d without an answer, %d on ended sessions; inside them %d writes and %d reads answered; %d names seen, %d events streamed, %d of the trail's due on the streams; %d trail events of their credential",
		len(reqs), rep.Refused, rep.ReadOnly, rep.Faulted, rep.Gone, rep.Writes, rep.Reads, rep.Seen, rep.Streamed, rep.Expected, rep.Trail)
	const most = 50
	for i, p := range rep.Problems {
		if i == most {
			r.t.Errorf("scope: and %d more (scope.json in the run's folder)", len(rep.Problems)-most)
			break
		}
		r.t.Error("scope:", p)
	}
}
