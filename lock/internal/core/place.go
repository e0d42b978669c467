package core

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A session's place in a queue.
//
// An acquire in a session waits at the session's place in the thing's
// queue: one entry, named by the session (placeKey) and kept under the
// session's lease, not under the node's waiter lease. An acquire that
// finds the place there (its entry put again keeps its CreateRevision)
// waits from it. So a wait longer than Config.MaxWait is a run of
// acquires with KeepPlace, each of which leaves the place in the queue
// when it runs out: the next one, on any node, takes it up, and a release
// meanwhile grants the lock to the session, whose next acquire finds it
// held (SameHolder). A thing with seats (a semaphore, a read/write lock)
// is not granted to a kept place: a session may hold several of its
// seats, so its next acquire could not tell that one from the others;
// the place waits at the head of the line for that acquire to take the
// seat (QueueEntryRecord). The place ends with the grant, with the
// session, or with a wait that ends without KeepPlace.
//
// Concurrent waits of one session for one thing share the place: the
// grant goes to one of them (another permit, or the session's hold of the
// lock that the other then finds), and a wait that finds the place gone
// takes it again, at the back of the line (waitAtPlace).

// placed says whether the acquire waits at its session's place: every
// acquire in a session but a lock set's.
func (a *Acquirer) placed() bool { return a.Session != 0 && a.Kind.WaitsAtPlace() }

// placeKey is the session's entry in the thing's queue (in a read/write
// lock's, in its mode's). A waiter lease's keys are hex: no "s".
func (a *Acquirer) placeKey() string { return a.Kind.EntryPrefix() + "s" + store.LeaseHex(a.Session) }

// waitAtPlace is wait at the session's place in the queue. Another wait
// of the session may take the place from under this one, granted or given
// up: this one then takes a place again, at the back of the line, until
// its own wait ends.
func (a *Acquirer) waitAtPlace(ctx context.Context) (l *hold.Lock, fresh bool, err error) {
	a.waitEnds = time.Now().Add(a.Req.Wait)
	for {
		l, fresh, err = a.waitAtPlaceOnce(ctx)
		if !errors.Is(err, errPlaceTaken) {
			return l, fresh, err
		}
	}
}

// errPlaceTaken says that the session's place is gone from under a wait
// at it: granted to the session for another of its waits, given up by
// one, or ended with the session (the next attempt tells).
var errPlaceTaken = errors.New("the session's place in the queue was taken by another of its waits")

// waitAtPlaceOnce waits at the place once, and leaves it unless the wait
// keeps it (keepsPlace) or lost it (errPlaceTaken).
func (a *Acquirer) waitAtPlaceOnce(ctx context.Context) (l *hold.Lock, fresh bool, err error) {
	qkey := a.placeKey()
	granted := false
	defer func() {
		if granted || errors.Is(err, errPlaceTaken) || a.keepsPlace(ctx, err) {
			return
		}
		got, lerr := a.Leave(qkey)
		if errors.Is(lerr, errEntryVanished) {
			// The session's end took the place, or another of its
			// waits did: a grant to it is the session's, under its
			// lease, and shows among the session's holds.
			lerr = nil
		}
		l, fresh, err = a.left(ctx, got, lerr, l, fresh, err)
	}()
	l, fresh, granted, err = a.queueUp(ctx, &QueueEntry{Key: qkey, Lease: a.Session, place: true}, nil)
	return l, fresh, err
}

// keepsPlace says whether a wait that ended with err leaves the session's
// place in the queue: one that ran out, asked to. The refusal then says
// so.
func (a *Acquirer) keepsPlace(ctx context.Context, err error) bool {
	var he *hold.HeldError
	if !a.Req.KeepPlace || ctx.Err() != nil || !errors.As(err, &he) {
		return false
	}
	he.PlaceKept = true
	return true
}

// reattach takes up the session's place, which the direct attempt first
// found in the queue and put its entry over: the CreateRevision, and so
// the place, is the one it had. The entry now says this acquire's start
// as when it began to wait; it is written again with the place's own,
// which the grant records (Event.QueuedAt). The queued attempt that
// follows tells what to wait for.
func (a *Acquirer) reattach(ctx context.Context, qkey string, first AttemptResult) (AttemptResult, int64, error) {
	e := a.E
	var was hold.WaiterRecord
	if json.Unmarshal(first.place, &was) == nil && !was.Since.IsZero() && was.Since.Before(a.queuedAt) {
		a.queuedAt = was.Since
		value := a.EntryValue(store.NowUTC())
		err := e.Etcd.RetryNotApplied(ctx, func(octx context.Context) error {
			_, err := e.Cli.Txn(octx).If(clientv3.Compare(clientv3.CreateRevision(qkey), "=", first.placeRev)).
				Then(clientv3.OpPut(qkey, value, clientv3.WithLease(a.Session))).Commit()
			return err
		})
		switch {
		case store.IsLeaseNotFound(err):
			return AttemptResult{}, 0, hold.ErrSessionNotFound
		case err != nil:
			return AttemptResult{}, 0, e.Etcd.Err(ctx, "take up the session's place", err)
		}
	}
	return AttemptResult{Outcome: RetryNow}, first.placeRev, nil
}
