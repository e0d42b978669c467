package hold

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestLeaseClock_AnswersOnlyWhileHalfTheTTLIsLeft checks the clock's
// rules: it answers from + ttl while at least half the granted TTL is
// left, never for a lease it does not know or forgot, and a late answer
// never moves a bound back.
func TestLeaseClock_AnswersOnlyWhileHalfTheTTLIsLeft(t *testing.T) {
	var c LeaseClock
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	const id = clientv3.LeaseID(7)
	if _, _, ok := c.Expiry(id, t0); ok {
		t.Fatal("answered for a lease it never saw")
	}
	c.Saw(id, t0, 20*time.Second, 20*time.Second)
	at, granted, ok := c.Expiry(id, t0.Add(10*time.Second))
	if !ok || !at.Equal(t0.Add(20*time.Second)) || granted != 20*time.Second {
		t.Fatalf("with half the TTL left: %v %v %v, want %v 20s true", at, granted, ok, t0.Add(20*time.Second))
	}
	if _, _, ok := c.Expiry(id, t0.Add(10*time.Second+time.Millisecond)); ok {
		t.Fatal("answered with less than half the TTL left")
	}
	// An answer that began earlier and arrived later says less.
	c.Saw(id, t0.Add(-time.Second), 20*time.Second, 20*time.Second)
	if at, _, _ := c.Expiry(id, t0); !at.Equal(t0.Add(20 * time.Second)) {
		t.Fatalf("a late answer moved the bound to %v", at)
	}
	c.Saw(id, t0.Add(5*time.Second), 20*time.Second, 20*time.Second)
	if at, _, _ := c.Expiry(id, t0.Add(5*time.Second)); !at.Equal(t0.Add(25 * time.Second)) {
		t.Fatalf("a renewal left the bound at %v, want %v", at, t0.Add(25*time.Second))
	}
	c.Forget(id)
	if _, _, ok := c.Expiry(id, t0); ok {
		t.Fatal("answered for a lease it forgot")
	}
}

// TestLeaseClock_KeepsTwoGenerations checks that the clock holds between
// one and two generations of leases: the newest are kept, the oldest go.
func TestLeaseClock_KeepsTwoGenerations(t *testing.T) {
	var c LeaseClock
	t0 := time.Now()
	for i := range 2*leaseClockSize + 1 {
		c.Saw(clientv3.LeaseID(i+1), t0, time.Minute, time.Minute)
	}
	if _, _, ok := c.Expiry(1, t0); ok {
		t.Error("the first lease outlived two generations")
	}
	for _, id := range []clientv3.LeaseID{leaseClockSize + 1, 2*leaseClockSize + 1} {
		if _, _, ok := c.Expiry(id, t0); !ok {
			t.Errorf("lease %d of the last two generations forgotten", id)
		}
	}
}
