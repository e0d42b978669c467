package lock

import (
	"context"
	"fmt"
	"slices"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ReleaseSet ends the lock set that token holds: every member of names
// still held with token, in one txn, each handed to its next waiter as a
// release would. A member released or revoked on its own before is left
// alone. It returns ErrNotHeld when no member is held, ErrTokenMismatch
// when some are but none with token, and ErrNotOwner, ending nothing,
// when ctx's caller may not act on the set (see Caller).
func (e *Engine) ReleaseSet(ctx context.Context, names []string, token int64) error {
	if err := checkNames(names); err != nil {
		return err
	}
	if token <= 0 {
		return hold.Invalid("token", "must be a positive fencing token")
	}
	if err := e.endSet(ctx, names, token, ""); err != nil {
		return fmt.Errorf("release lock set %s: %w", setLabel(names), err)
	}
	return nil
}

// RenewSet extends the lease of the lock set that token holds (for a set
// in a session, the session's), and returns the set with its new expiry.
// It returns ErrNotHeld or ErrTokenMismatch, naming the member, when token
// no longer holds every member of names.
func (e *Engine) RenewSet(ctx context.Context, names []string, token int64) (*LockSet, error) {
	if err := checkNames(names); err != nil {
		return nil, err
	}
	if token <= 0 {
		return nil, hold.Invalid("token", "must be a positive fencing token")
	}
	s, err := e.renewSet(ctx, names, token)
	if err != nil {
		e.core.Metrics.RenewFailed(hold.RenewLock, err)
		return nil, fmt.Errorf("renew lock set %s: %w", setLabel(names), err)
	}
	return s, nil
}

func (e *Engine) renewSet(ctx context.Context, names []string, token int64) (*LockSet, error) {
	held, err := e.readSet(ctx, names, token, false)
	if err == nil {
		err = held.whole()
	}
	if err != nil {
		return nil, err
	}
	hr := held.ends[0].Hr
	for _, end := range held.ends {
		if !hold.MayActOn(ctx, end.Hr.Credential) {
			return nil, fmt.Errorf("the hold with token %d was acquired by another credential: %w", token, ErrNotOwner)
		}
	}
	ttl, start, err := e.keepAlive(ctx, hr.Lease)
	if err != nil {
		return nil, err
	}
	// The lease may have outlived the set (a session's does): answer
	// success only if token still holds every member.
	if held, err = e.readSet(ctx, names, token, false); err == nil {
		err = held.whole()
	}
	if err != nil {
		return nil, err
	}
	l := hold.ToLock(hr, names[0], token)
	l.TTL, l.ExpiresAt = ttl, core.ExpiryAt(start, ttl)
	return setOf(names, l), nil
}

// endSet releases, in one txn, every member of names that token holds,
// with detail in the end events.
func (e *Engine) endSet(ctx context.Context, names []string, token int64, detail string) error {
	for range core.MaxImmediateRetries {
		held, err := e.readSet(ctx, names, token, true)
		if err != nil {
			return err
		}
		for _, end := range held.ends {
			if !hold.MayActOn(ctx, end.Hr.Credential) {
				return fmt.Errorf("the hold with token %d was acquired by another credential: %w", token, ErrNotOwner)
			}
		}
		if done, err := e.commitSetEnd(ctx, held.ends, detail); done || err != nil {
			return err
		}
		// A member changed between the read and the txn: read again.
	}
	return fmt.Errorf("its locks change hands too fast: %w", ErrUnavailable)
}

// heldSet is what a read of a lock set's members found.
type heldSet struct {
	// ends are the members held with the token, each with its queue's
	// head when the read asked for heads.
	ends []core.PlannedEnd
	// lost are the other members; other is set if one of them is held
	// with another token.
	lost  []string
	other int64
}

// whole returns nil when every member is held with the token, and else
// the error that names the first member that is not.
func (h heldSet) whole() error {
	if len(h.lost) == 0 {
		return nil
	}
	if h.other != 0 {
		return fmt.Errorf("%w: %q is held with token %d", ErrTokenMismatch, h.lost[0], h.other)
	}
	return fmt.Errorf("%w: %q", ErrNotHeld, h.lost[0])
}

// readSet reads the members of names, and with withHeads the head of each
// one's queue. Like ReadHold it reads the member's local state first and
// confirms with a linearizable read unless that shows token holding every
// member: the end txn compares each member's ModRevision with token, so a
// stale read never ends the wrong hold. It returns ErrNotHeld when no
// member is held, and ErrTokenMismatch when none is held with token.
func (e *Engine) readSet(ctx context.Context, names []string, token int64, withHeads bool) (heldSet, error) {
	read := func(opts ...clientv3.OpOption) (heldSet, error) {
		var t store.Txn
		reads := make([]core.HoldReads, len(names))
		for i, n := range names {
			reads[i] = e.core.HoldReads(&t, n, withHeads, opts...)
		}
		octx, done := e.core.Etcd.Op(ctx)
		defer done()
		resp, err := e.core.Cli.Txn(octx).Then(t.Then...).Commit()
		if err != nil {
			return heldSet{}, e.core.Etcd.Err(ctx, "read lock set", err)
		}
		var h heldSet
		for i, r := range reads {
			kv, head := r.Read(resp)
			switch {
			case kv == nil:
				h.lost = append(h.lost, names[i])
			case kv.ModRevision != token:
				h.lost, h.other = append(h.lost, names[i]), kv.ModRevision
			default:
				hr, err := store.DecodeHolder(kv)
				if err != nil {
					return heldSet{}, err
				}
				h.ends = append(h.ends, core.PlannedEnd{Name: names[i], Token: token, Hr: hr, Head: head})
			}
		}
		return h, nil
	}
	if !e.core.Etcd.MemberStopped() {
		if h, err := read(clientv3.WithSerializable()); err == nil && len(h.lost) == 0 {
			return h, nil
		}
	}
	h, err := read()
	switch {
	case err != nil:
		return heldSet{}, err
	case len(h.ends) == 0 && h.other != 0:
		return heldSet{}, fmt.Errorf("%w: held with token %d", ErrTokenMismatch, h.other)
	case len(h.ends) == 0:
		return heldSet{}, ErrNotHeld
	}
	return h, nil
}

// commitSetEnd ends every hold of ends, members of one lock set, in one
// txn: each as EndTxn ends a hold (its end event, its lock key deleted or
// handed to its queue's head, a tally shard of its own), under one compare
// per member, so that all end or none. done is false when a member changed
// since it was read.
func (e *Engine) commitSetEnd(ctx context.Context, ends []core.PlannedEnd, detail string) (done bool, err error) {
	at := store.NowUTC()
	var (
		resp *clientv3.TxnResponse
		refs []core.EndRefs
	)
	send := func() error {
		var (
			t      store.Txn
			urgent bool
		)
		refs = refs[:0]
		heads := core.HandOverHeads(ends)
		for i, end := range ends {
			ev := hold.EndEvent(end.Hr, ctx, end.Name, end.Token, EventReleased, detail)
			ev.Time = at
			r := e.core.EndTxn(&t, end.Name, end.Token, end.Hr, ev, heads[i], i)
			urgent = urgent || r.HandOver.Ok()
			refs = append(refs, r)
		}
		txn := e.core.Batch.Txn
		if urgent {
			txn = e.core.Batch.TxnUrgent // the next holders wait on this commit
		}
		return e.core.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
			resp, err = txn(octx, t.Cmps, t.Then, nil)
			return err
		})
	}
	err = send()
	if err != nil && store.IsLeaseNotFound(err) {
		// A head's lease ended while it waited (see commitEnd).
		for i := range ends {
			ends[i].Head = nil
		}
		err = send()
	}
	if err != nil {
		return false, e.core.Etcd.Err(ctx, "end lock set", err)
	}
	if !resp.Succeeded {
		return false, nil
	}
	ended := make([]string, len(ends))
	for i, end := range ends {
		e.core.Holds.Take(end.Name, end.Token) // the cached record is of a hold that is gone
		e.core.Metrics.RecordedOf(end.Name, EventReleased, 1)
		e.core.Metrics.RecordedOf(end.Name, EventAcquired, refs[i].HandedOver(resp))
		ended[i] = end.Name
	}
	if hr := ends[0].Hr; !slices.ContainsFunc(hr.Set, func(n string) bool { return !slices.Contains(ended, n) }) {
		e.core.LeaseAfter(EventReleased, hr) // no member is left under it
	}
	return true, nil
}

func (k *setKind) EndOwn(ctx context.Context, token int64, _ *store.Holder, detail string) error {
	return k.e.endSet(ctx, k.members, token, detail)
}
