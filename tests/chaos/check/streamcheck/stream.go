package streamcheck

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// Record is one write of a session's stream record
// (/baton/sessionstream/<id>) as a watch of etcd saw it: each attach and
// detach rewrites it, the node that ends the session marks it Ended, and
// the lease's end deletes it (Deleted).
type Record struct {
	Session  string `json:"session"`
	Revision int64  `json:"revision"`
	Open     bool   `json:"open,omitempty"`
	Ended    bool   `json:"ended,omitempty"`
	Deleted  bool   `json:"deleted,omitempty"`
	// Since is the record's: when the stream opened or closed, or the
	// session was created or ended, by the writing node's clock.
	Since time.Time `json:"since"`
	// Seen is when the watch saw it, in nanoseconds since the run began.
	Seen int64 `json:"seen"`
}

// Fault is a time, in nanoseconds since the run began, when Node (-1:
// every node, as when etcd's leadership moves) could not serve or end
// streams: killed until it was ready again, paused, or cut off.
type Fault struct {
	Node int    `json:"node"`
	From int64  `json:"from"`
	To   int64  `json:"to"`
	What string `json:"what"`
}

// Config is what the bounds are made of.
type Config struct {
	// Start is the wall-clock time of the run's 0.
	Start time.Time
	// KeepAlive is how often the serving node renews a session's lease
	// (lock.SessionKeepAliveEvery), the bound's allowance past the grace.
	KeepAlive time.Duration
	// Slack is the bound's allowance for the end's own work: the detach,
	// the end mark and the revoke (three etcd writes) and the trail
	// reading the revoke's revision.
	Slack time.Duration
	// MinTTL is the least lease TTL, ElectionTimeout etcd's: a faulted
	// close is bounded by the lease's TTL and an election.
	MinTTL, ElectionTimeout time.Duration
}

// lessorTick is how often etcd's lessor looks for expired leases
// (lease.lessor's runLoop): a lease ends up to this long after its TTL.
const lessorTick = 500 * time.Millisecond

// leaseTTL is the lease of a session of grace: the grace and one renewal
// in whole seconds, at least MinTTL (lock/internal/session.StreamLeaseTTL).
func (c Config) leaseTTL(grace time.Duration) time.Duration {
	return max(c.MinTTL, (grace+c.KeepAlive+time.Second-1)/time.Second*time.Second)
}

// Report is what CheckStreams found: the closes it bounded, strictly
// (no fault) or by the lease, those whose end the trail cannot show (a
// session without holds), how many were timed by the server's detach
// rather than the client's cancel, the longest end past a strict close
// (from its detach to its end, less the grace), and the problems.
type Report struct {
	Strict, Faulted, Reattached, Unseen int
	ServerTimed, ClientTimed            int
	WorstStrict                         time.Duration
	Problems                            []string
}

// session is one stream-bound session as the ops and the trail show it.
type session struct {
	id      string
	grace   time.Duration
	created check.Op
	streams []*stream
	locks   map[string]bool
	end     int64 // its holds' first session_expired, ns since the start; -1: none
	endRev  int64
}

// stream is one stream the client opened: its open op and its close (nil
// while it never closed).
type stream struct {
	open  check.Op
	close *check.Op
}

// CheckStreams checks the settled trail events against the stream-bound
// sessions' ops, the stream records the watch saw and the faults, as the
// package says.
func CheckStreams(ops []check.Op, events []check.AuditEvent, recs []Record, faults []Fault, cfg Config) Report {
	ss := sessions(ops)
	byID := map[string][]Record{}
	for _, r := range recs {
		byID[r.Session] = append(byID[r.Session], r)
	}
	ends(ss, events, byID, cfg)
	var rep Report
	for _, id := range slices.Sorted(maps.Keys(ss)) {
		s := ss[id]
		for _, c := range s.closes() {
			rep.bound(s, c, byID[id], faults, cfg)
		}
		rep.early(s, byID[id], faults, cfg)
	}
	return rep
}

// sessions gathers the stream-bound sessions of ops by their IDs.
func sessions(ops []check.Op) map[string]*session {
	ss := map[string]*session{}
	streams := map[string]*stream{}
	for _, op := range ops {
		if op.Kind == check.StreamSession && op.Session != "" {
			g, _ := time.ParseDuration(op.Grace)
			ss[op.Session] = &session{id: op.Session, grace: g, created: op, locks: map[string]bool{}, end: -1}
		}
	}
	for _, op := range ops {
		s := ss[op.Session]
		if s == nil {
			continue
		}
		switch op.Kind {
		case check.StreamOpen:
			st := &stream{open: op}
			streams[op.Value] = st
			s.streams = append(s.streams, st)
		case check.StreamClose:
			if st := streams[op.Value]; st != nil {
				st.close = &op
			}
		case check.StreamAcquire:
			if op.Result != check.Failed && op.Result != check.Rejected {
				s.locks[op.Lock] = true
			}
		}
	}
	for _, s := range ss {
		slices.SortFunc(s.streams, func(a, b *stream) int { return int(a.open.Call - b.open.Call) })
	}
	return ss
}

// ends sets each session's end: the earliest session_expired of its
// holds (their Session, or their locks, which no other session takes),
// or, when the watch saw the lease's end delete the stream record
// first, that. Both come no sooner than the end: the trail stamps a
// derived end when it reads the revision, which a stopped trail does
// late; the watch sees the delete a delivery after it.
func ends(ss map[string]*session, events []check.AuditEvent, recs map[string][]Record, cfg Config) {
	byLock := map[string]*session{}
	for _, s := range ss {
		for l := range s.locks {
			byLock[l] = s
		}
	}
	for _, ev := range events {
		if ev.Type != "session_expired" {
			continue
		}
		s := ss[ev.Session]
		if s == nil {
			s = byLock[ev.Lock]
		}
		if s == nil {
			continue
		}
		if at := ev.Time.Sub(cfg.Start).Nanoseconds(); s.end < 0 || at < s.end {
			s.end, s.endRev = at, ev.Revision
		}
	}
	for id, s := range ss {
		if s.end < 0 {
			continue // no hold ended: the end is unseen (Report.Unseen)
		}
		for _, r := range recs[id] {
			if r.Deleted && r.Seen < s.end {
				s.end = r.Seen
			}
		}
	}
}

// closing is a time the session's last stream closed: its creation
// (no stream yet), or a stream's close.
type closing struct {
	at   int64 // the client's: the create's call, the cancel
	node int
	lost bool // the stream broke or the server ended it
	what string
}

func (s *session) closes() []closing {
	out := []closing{{at: s.created.Call, node: s.created.Node, what: fmt.Sprintf("its creation (op %d)", s.created.ID)}}
	for _, st := range s.streams {
		if st.open.Result != check.OK || st.close == nil {
			continue
		}
		c := st.close
		out = append(out, closing{at: c.Call, node: st.open.Node, lost: c.Code != "",
			what: fmt.Sprintf("stream %s on n%d closed (op %d, %s)", c.Value, st.open.Node+1, c.ID, cmpOr(c.Code, "cancelled"))})
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// serverClose is the server's time of the detach after the client's
// close at c (its stream record's Since), in ns since the start: the
// first detach or creation record it wrote at or after c.
func serverClose(recs []Record, c int64, cfg Config) (int64, bool) {
	best, ok := int64(0), false
	for _, r := range recs {
		if r.Open || r.Ended || r.Deleted {
			continue
		}
		// The record's time is the server's: at most a rounding
		// before the client's cancel that caused it.
		at := r.Since.Sub(cfg.Start).Nanoseconds()
		if at >= c-int64(time.Millisecond) && (!ok || at < best) {
			best, ok = at, true
		}
	}
	return best, ok
}

// faultIn is the latest end of the faults of node (-1: any) that
// overlap [from, to], or false for none. A fault of every node (-1)
// counts for each.
func faultIn(faults []Fault, node int, from, to int64) (int64, bool) {
	last, ok := int64(0), false
	for _, f := range faults {
		if (node < 0 || f.Node < 0 || f.Node == node) && f.From <= to && from <= f.To {
			last, ok = max(last, f.To), true
		}
	}
	return last, ok
}

func secs(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }
