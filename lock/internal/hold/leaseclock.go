package hold

import (
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A hold's answer says when its lease runs out (ExpiresAt). Asked of etcd
// (leaseExpiry), that is a round trip after the grant, on the path of
// every session acquire. The node granted or renewed most session leases
// it serves itself, and etcd's answer then said how long the lease lives
// from that moment, so the node remembers it (LeaseClock) and answers
// from it.
//
// What the clock answers is a lower bound on the lease's expiry, never
// later than etcd's: it counts the TTL from the moment before the node
// asked, and a lease only ever lives longer than it did then (a renewal
// through any node, or a new leader, extends it; a revoke ends every hold
// on it too, so no answer about such a hold is left to be wrong). A lease
// renewed through another node would make the bound fall ever further
// behind the truth, so it is used only while at least half the lease's
// TTL is left; past that the node asks etcd again, and remembers that.

// leaseClockSize is how many leases one generation of the clock keeps;
// with two, it remembers between this many and twice as many of the
// leases it saw last. A lease it forgot is asked of etcd, as without it.
const leaseClockSize = 16384

// LeaseClock keeps, for leases this node granted, renewed or looked up,
// when it last learned how long each had to live.
type LeaseClock struct {
	mu       sync.Mutex
	cur, old map[clientv3.LeaseID]leaseSeen
}

// leaseSeen says that at from the lease had at least ttl to live; granted
// is the TTL it was granted with.
type leaseSeen struct {
	from         time.Time
	ttl, granted time.Duration
}

// saw records that at from the lease had at least ttl to live.
func (c *LeaseClock) Saw(id clientv3.LeaseID, from time.Time, ttl, granted time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		c.cur = make(map[clientv3.LeaseID]leaseSeen)
	}
	if s, ok := c.cur[id]; ok && s.from.Add(s.ttl).After(from.Add(ttl)) {
		return // an answer that came late says less than the one kept
	}
	if len(c.cur) >= leaseClockSize {
		c.old, c.cur = c.cur, make(map[clientv3.LeaseID]leaseSeen, leaseClockSize)
	}
	c.cur[id] = leaseSeen{from: from, ttl: ttl, granted: granted}
}

// forget drops what the clock knows of the lease: it was revoked.
func (c *LeaseClock) Forget(id clientv3.LeaseID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cur, id)
	delete(c.old, id)
}

// expiry returns the bound on the lease's expiry and its granted TTL,
// if the clock knows the lease and at least half its TTL is left at now.
func (c *LeaseClock) Expiry(id clientv3.LeaseID, now time.Time) (at time.Time, granted time.Duration, ok bool) {
	c.mu.Lock()
	s, ok := c.cur[id]
	if !ok {
		s, ok = c.old[id]
	}
	c.mu.Unlock()
	if !ok || s.granted <= 0 {
		return time.Time{}, 0, false
	}
	at = s.from.Add(s.ttl)
	if at.Before(now.Add(s.granted / 2)) {
		return time.Time{}, 0, false
	}
	return at, s.granted, true
}
