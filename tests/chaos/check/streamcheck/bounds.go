package streamcheck

import (
	"fmt"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// bound checks that session s ended in time after the close c, unless a
// stream reattached within the grace.
func (rep *Report) bound(s *session, c closing, recs []Record, faults []Fault, cfg Config) {
	grace := s.grace.Nanoseconds()
	var next *stream // the first attach after c that may have taken
	for _, st := range s.streams {
		if st.open.Call > c.at && (st.open.Result == check.OK || st.open.Result == check.Unknown) {
			next = st
			break
		}
	}
	if next != nil && next.open.Call <= c.at+grace {
		return // reattached within the grace: the next close is the one
	}
	if s.end >= 0 && s.end < c.at {
		return // a lease that ran out ended it first; early says if that was right
	}
	base, server := serverClose(recs, c.at, cfg)
	if server {
		rep.ServerTimed++
	} else {
		base = c.at
		rep.ClientTimed++
	}
	deadline := base + grace + (cfg.KeepAlive + cfg.Slack).Nanoseconds()
	kind := "strict"
	if _, faulted := faultIn(faults, -1, c.at, deadline); faulted || c.lost {
		kind = "faulted"
		// A new leader extends every lease by an election timeout, and
		// its lessor looks for expired leases every lessorTick.
		lease := (cfg.leaseTTL(s.grace) + cfg.ElectionTimeout + lessorTick + cfg.Slack).Nanoseconds()
		from := c.at
		if to, ok := faultIn(faults, -1, c.at, c.at+lease); ok {
			from = max(from, to)
		}
		deadline = from + lease
	}
	// Alive past the deadline: an attach after it that took, or an end
	// after it. An attach before it that may have taken let the session
	// go on, as it may, and so may one that is Unknown.
	if next != nil {
		switch {
		case next.open.Call <= deadline || next.open.Result != check.OK:
			rep.Reattached++
			return
		default:
			rep.Problems = append(rep.Problems, fmt.Sprintf("session %s (grace %s): after %s at %s (server %s), no stream reattached within the grace, but stream %s attached at %s, past the %s deadline %s",
				s.id, s.grace, c.what, secs(c.at), secs(base), next.open.Value, secs(next.open.Call), kind, secs(deadline)))
			return
		}
	}
	if s.end < 0 {
		rep.Unseen++
		return
	}
	if kind == "strict" {
		rep.Strict++
		rep.WorstStrict = max(rep.WorstStrict, time.Duration(s.end-base-grace))
	} else {
		rep.Faulted++
	}
	if s.end > deadline {
		rep.Problems = append(rep.Problems, fmt.Sprintf("session %s (grace %s): after %s at %s (server %s), its holds ended at %s (revision %d), %s after the close, past the %s deadline %s",
			s.id, s.grace, c.what, secs(c.at), secs(base), secs(s.end), s.endRev, time.Duration(s.end-base), kind, secs(deadline)))
	}
}

// early checks that session s did not end while a stream of it was open
// on a node without a fault, nor before its grace had passed since its
// last close.
func (rep *Report) early(s *session, recs []Record, faults []Fault, cfg Config) {
	if s.end < 0 {
		return
	}
	// A node with a fault may have left the lease unrenewed for its TTL.
	lease := (cfg.leaseTTL(s.grace) + cfg.ElectionTimeout + time.Second).Nanoseconds()
	for _, st := range s.streams {
		if st.open.Result != check.OK || st.open.Return >= s.end || (st.close != nil && st.close.Call <= s.end) {
			continue
		}
		if _, faulted := faultIn(faults, st.open.Node, s.end-lease, s.end); faulted {
			continue
		}
		rep.Problems = append(rep.Problems, fmt.Sprintf("session %s (grace %s): its holds ended at %s (revision %d) while stream %s was open on n%d (attached at %s, %s), with no fault of that node",
			s.id, s.grace, secs(s.end), s.endRev, st.open.Value, st.open.Node+1, secs(st.open.Return), closedAt(st)))
		return
	}
	var last *closing
	for _, c := range s.closes() {
		if c.at < s.end {
			last = &c
		}
	}
	if last == nil || last.lost {
		return
	}
	if _, faulted := faultIn(faults, last.node, s.end-lease, s.end); faulted {
		return
	}
	base := last.at
	if at, ok := serverClose(recs, last.at, cfg); ok && at < s.end {
		base = at
	}
	// The trail's times are truncated to the millisecond.
	if s.end < base+s.grace.Nanoseconds()-int64(time.Millisecond) {
		rep.Problems = append(rep.Problems, fmt.Sprintf("session %s (grace %s): its holds ended at %s (revision %d), %s after %s at %s (server %s): before its grace had passed",
			s.id, s.grace, secs(s.end), s.endRev, time.Duration(s.end-base), last.what, secs(last.at), secs(base)))
	}
}

func closedAt(st *stream) string {
	if st.close == nil {
		return "never closed"
	}
	return "closed at " + secs(st.close.Call)
}
