package lock

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// What the things with seats (internal/store/kinds.go) share beyond acquiring: listing
// their holds, a page at a time, and ending one by its token.

// heldState reads the holds of the thing of kind k named name and its
// waiters (at most MaxListLimit of each), or ErrNotHeld when nothing
// holds it.
func (e *Engine) heldState(ctx context.Context, k EventKind, name string) (holders []*Lock, waiters []Waiter, err error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, nil, err
	}
	key := store.KeyName(k, name)
	var t store.Txn
	seats := t.OnSuccess(clientv3.OpGet(store.SeatsOf(e.core.Keys.Locks(), key), clientv3.WithPrefix(), clientv3.WithLimit(MaxListLimit)))
	queue := t.OnSuccess(clientv3.OpGet(e.core.Keys.Queue(key), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(MaxListLimit)))
	octx, done := e.core.Etcd.Op(ctx)
	resp, err := e.core.Cli.Txn(octx).Then(t.Then...).Commit()
	done()
	if err != nil {
		return nil, nil, e.core.Etcd.Err(ctx, "read "+string(k), err)
	}
	if holders, err = e.holdsOf(ctx, seats.KVs(resp), map[string]core.LeaseTimes{}); err != nil {
		return nil, nil, err
	}
	if len(holders) == 0 {
		return nil, nil, fmt.Errorf("%s %q: %w", k, name, ErrNotHeld)
	}
	return holders, waitersOf(queue.KVs(resp)), nil
}

// renewSeat extends the lease of the hold token of the thing of kind k
// named name.
func (e *Engine) renewSeat(ctx context.Context, k EventKind, name string, token int64) (*Lock, error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, err
	}
	l, err := e.renew(ctx, store.KeyName(k, name), token)
	if err != nil {
		return nil, seatsErr("renew "+holdWord(k)+" of", name, err)
	}
	return l, nil
}

// holdWord is what a hold of kind k is called in errors.
func holdWord(k EventKind) string {
	if k == KindSemaphore {
		return "a permit"
	}
	return "a hold"
}

// holdsOf renders the seat keys kvs, sorted by token.
func (e *Engine) holdsOf(ctx context.Context, kvs []*mvccpb.KeyValue, expiry map[string]core.LeaseTimes) ([]*Lock, error) {
	holders := make([]*Lock, 0, len(kvs))
	for _, kv := range kvs {
		l, err := e.core.DecodeLock(ctx, kv, expiry)
		if err != nil {
			return nil, err
		}
		holders = append(holders, l)
	}
	sort.Slice(holders, func(i, j int) bool { return holders[i].Token < holders[j].Token })
	return holders, nil
}

// heldThing is one thing of a page of seatPage: its name and holds.
type heldThing struct {
	name    string
	holders []*Lock
}

// seatPage returns the things of kind k that have holds, sorted by name,
// a page at a time as List does for locks. A page reads at most
// MaxListLimit seats, so it may hold fewer things than o.Limit: a thing
// whose seats the read cut off starts the next page, unless it is the
// page's only one, which then shows its first MaxListLimit holds.
func (e *Engine) seatPage(ctx context.Context, k EventKind, o ListOptions) ([]heldThing, string, error) {
	if err := checkListOptions(&o); err != nil {
		return nil, "", err
	}
	base := e.core.Keys.Locks()
	start, end := store.KindRange(base, k, o.Prefix)
	if o.After != "" {
		// Past every seat of After: "#" sorts below every name
		// character, so they all come before the next name.
		if after := clientv3.GetPrefixRangeEnd(store.SeatsOf(base, store.KeyName(k, o.After))); after > start {
			start = after
		}
	}
	octx, done := e.core.Etcd.Op(ctx)
	resp, err := e.core.Cli.Get(octx, start, clientv3.WithRange(end), clientv3.WithLimit(MaxListLimit))
	done()
	if err != nil {
		return nil, "", e.core.Etcd.Err(ctx, "list", err)
	}
	var (
		names  []string
		byName = map[string][]*mvccpb.KeyValue{}
	)
	for _, kv := range resp.Kvs {
		_, name := store.ThingOf(string(kv.Key[len(base):]))
		if _, ok := byName[name]; !ok {
			names = append(names, name)
		}
		byName[name] = append(byName[name], kv)
	}
	if resp.More && len(names) > 1 {
		names = names[:len(names)-1] // cut off: it starts the next page
	}
	next := ""
	if len(names) > o.Limit {
		names, next = names[:o.Limit], names[o.Limit-1]
	} else if resp.More {
		next = names[len(names)-1]
	}
	expiry := map[string]core.LeaseTimes{}
	page := make([]heldThing, len(names))
	for i, name := range names {
		holders, err := e.holdsOf(ctx, byName[name], expiry)
		if err != nil {
			return nil, "", err
		}
		page[i] = heldThing{name: name, holders: holders}
	}
	return page, next, nil
}

// endSeat ends the hold token of the thing of kind k named name by typ
// (released or revoked), with detail; the release hands on in its txn
// as any release does.
func (e *Engine) endSeat(ctx context.Context, k EventKind, name string, token int64, typ EventType, detail string) error {
	if err := store.CheckName("name", name); err != nil {
		return err
	}
	if len(detail) > MaxReasonLen {
		return hold.Invalid("reason", "must be at most %d bytes", MaxReasonLen)
	}
	what := "release " + holdWord(k) + " of"
	if typ == EventRevoked {
		what = "revoke " + holdWord(k) + " of"
	}
	if err := e.core.EndHold(ctx, store.KeyName(k, name), token, typ, detail); err != nil {
		return seatsErr(what, name, err)
	}
	return nil
}

// seatsErr is err, from the lock machinery under a thing with seats, as
// the thing's: a token that holds none of its seats is a hold not held.
func seatsErr(what, name string, err error) error {
	var ie *InvalidError
	if errors.As(err, &ie) {
		return err
	}
	if errors.Is(err, ErrTokenMismatch) || errors.Is(err, ErrNotHeld) {
		return fmt.Errorf("%s %q: none is held with that token: %w", what, name, ErrNotHeld)
	}
	return fmt.Errorf("%s %q: %w", what, name, err)
}
