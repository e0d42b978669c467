package lock

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/baton-dev/baton/internal/store"
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
// held (sameHolder). The place ends with the grant, with the session, or
// with a wait that ends without KeepPlace.
//
// Concurrent waits of one session for one thing share the place: the
// first to end without KeepPlace ends it for both, and the other then
// answers that its entry is gone (ErrUnavailable).

// placed says whether the acquire waits at its session's place: every
// acquire in a session but a lock set's.
func (a *acquirer) placed() bool { return a.session != 0 && a.members == nil }

// placeKey is the session's entry in the thing's queue (in a read/write
// lock's, in its mode's). A waiter lease's keys are hex: no "s".
func (a *acquirer) placeKey() string { return a.entryPrefix() + "s" + store.LeaseHex(a.session) }

// waitAtPlace is wait at the session's place in the queue.
func (a *acquirer) waitAtPlace(ctx context.Context) (l *Lock, fresh bool, err error) {
	qkey := a.placeKey()
	granted := false
	defer func() {
		if granted || a.keepsPlace(ctx, err) {
			return
		}
		got, lerr := a.leave(qkey)
		if errors.Is(lerr, errEntryVanished) && errors.Is(err, ErrSessionNotFound) {
			// The session's end took the place, and any grant to it:
			// both lived under its lease.
			lerr = nil
		}
		l, fresh, err = a.left(ctx, got, lerr, l, fresh, err)
	}()
	l, fresh, granted, err = a.queueUp(ctx, qkey, &queueEntry{key: qkey, lease: a.session, place: true}, nil)
	return l, fresh, err
}

// keepsPlace says whether a wait that ended with err leaves the session's
// place in the queue: one that ran out, asked to. The refusal then says
// so.
func (a *acquirer) keepsPlace(ctx context.Context, err error) bool {
	var he *HeldError
	if !a.req.KeepPlace || ctx.Err() != nil || !errors.As(err, &he) {
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
func (a *acquirer) reattach(ctx context.Context, qkey string, first attemptResult) (attemptResult, int64, error) {
	e := a.e
	var was waiterRecord
	if json.Unmarshal(first.place, &was) == nil && !was.Since.IsZero() && was.Since.Before(a.queuedAt) {
		a.queuedAt = was.Since
		value := a.entryValue(store.NowUTC())
		err := e.etcd.RetryNotApplied(ctx, func(octx context.Context) error {
			_, err := e.cli.Txn(octx).If(clientv3.Compare(clientv3.CreateRevision(qkey), "=", first.placeRev)).
				Then(clientv3.OpPut(qkey, value, clientv3.WithLease(a.session))).Commit()
			return err
		})
		switch {
		case store.IsLeaseNotFound(err):
			return attemptResult{}, 0, ErrSessionNotFound
		case err != nil:
			return attemptResult{}, 0, e.etcd.Err(ctx, "take up the session's place", err)
		}
	}
	return attemptResult{outcome: retryNow}, first.placeRev, nil
}
