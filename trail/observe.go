package trail

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock"
)

// ElectionChange is an election's state from Revision on: who leads, or
// nobody (Leader nil).
type ElectionChange struct {
	Revision int64
	// Leader is the leadership: its candidate (Owner), token, term,
	// value and session, and AcquiredAt when it was elected. A change
	// read from the trail carries no expiry or metadata, which the
	// events do not hold (Leader reads them); nor does a proclaim's when
	// the observation began after the election (AcquiredAt is zero).
	Leader *lock.Lock
}

// Observation streams an election's changes.
type Observation struct {
	// C delivers the changes in revision order, one per revision at
	// most: a resignation that hands the election over is one change,
	// to the next leader. It is closed when the observation ends; Err
	// then tells why.
	C      <-chan ElectionChange
	sub    *Subscription
	mu     sync.Mutex
	err    error
	cancel context.CancelFunc
}

// Err returns why C was closed, as Subscription.Err does.
func (o *Observation) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Close ends the observation.
func (o *Observation) Close() { o.cancel() }

// Observe streams the changes of election name. With resume, it sends the
// changes after revision since, from the audit trail and then live, each
// once; without, it first sends the state the election is in now, then
// every change after it. Changes come from the election's events, so an
// observer that resumes from the last revision it read misses none and
// sees none twice, whichever node it reconnects to.
func (t *Trail) Observe(ctx context.Context, name string, since int64, resume bool) (*Observation, error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, err
	}
	var first *ElectionChange
	if !resume {
		leader, rev, err := t.eng.ElectionNow(ctx, name)
		c := &ElectionChange{Revision: rev, Leader: leader}
		if err != nil {
			return nil, fmt.Errorf("observe %q: %w", name, err)
		}
		first, since = c, c.Revision
	}
	octx, cancel := context.WithCancel(ctx)
	sub, err := t.Subscribe(octx, SubscribeOptions{Replay: true, Since: since, Kind: KindElection, Name: name, marks: true})
	if err != nil {
		cancel()
		return nil, err
	}
	ch := make(chan ElectionChange, 16)
	o := &Observation{C: ch, sub: sub, cancel: cancel}
	go func() {
		defer close(ch)
		defer cancel()
		err := o.run(octx, first, ch)
		o.mu.Lock()
		o.err = err
		o.mu.Unlock()
	}()
	return o, nil
}

// run follows the subscription's events, sends first (if not nil) and
// then the state after each revision whose events changed it.
func (o *Observation) run(ctx context.Context, first *ElectionChange, ch chan<- ElectionChange) error {
	send := func(c ElectionChange) error {
		select {
		case ch <- c:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var sent, cur *lock.Lock // the state last sent, and as of the events so far
	known := first != nil
	if first != nil {
		sent, cur = first.Leader, first.Leader
		if err := send(*first); err != nil {
			return err
		}
	}
	for ev := range o.sub.C {
		if !isMark(ev) {
			cur = electionAfter(cur, ev)
			continue
		}
		if known && sameLeadership(sent, cur) {
			continue
		}
		known, sent = true, cur
		if err := send(ElectionChange{Revision: ev.Revision, Leader: cur}); err != nil {
			return err
		}
	}
	return o.sub.Err()
}

// electionAfter is the leadership cur after ev, one of its election's
// events.
func electionAfter(cur *lock.Lock, ev Event) *lock.Lock {
	switch ev.Type {
	case EventElected:
		return &lock.Lock{Name: ev.Name, Owner: ev.Owner, Token: ev.Token, Session: ev.Session, Term: ev.Term, Value: ev.Value,
			AcquiredAt: ev.Time, Credential: ev.Credential, Metadata: map[string]string{}}
	case EventProclaimed:
		if cur != nil && cur.Token == ev.Token {
			next := *cur
			next.Value = ev.Value
			return &next
		}
		return &lock.Lock{Name: ev.Name, Owner: ev.Owner, Token: ev.Token, Session: ev.Session, Term: ev.Term, Value: ev.Value,
			Metadata: map[string]string{}}
	case EventResigned, EventExpired, EventRevoked, EventSessionExpired:
		if cur == nil || cur.Token == ev.Token {
			return nil
		}
	}
	return cur
}

// sameLeadership reports whether a and b are one leadership with one
// value, or both nobody.
func sameLeadership(a, b *lock.Lock) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Token == b.Token && bytes.Equal(a.Value, b.Value)
}
