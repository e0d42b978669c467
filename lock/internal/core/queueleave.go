package core

import (
	"context"
	"errors"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// leave removes our queue entry, even though the caller has gone, and
// reads the lock in the same txn: once the entry is gone no release can
// grant us the lock, so the read tells for good whether one did before.
// It returns the lock if so.
func (a *Acquirer) Leave(qkey string) (*hold.Lock, error) {
	ctx, done := a.E.Etcd.CleanupCtx()
	defer done()
	var (
		resp    *clientv3.TxnResponse
		t       store.Txn
		entry   store.Ref // our entry, or a set's first
		holders []store.Ref
	)
	for i, k := range a.Kind.EntryKeys(qkey) {
		if r := t.OnSuccess(clientv3.OpDelete(k)); i == 0 {
			entry = r
		}
	}
	// Any seat may be the one a release granted us.
	for _, op := range a.Kind.HolderReads() {
		holders = append(holders, t.OnSuccess(op))
	}
	err := a.E.Etcd.RetryCleanup(ctx, func(ctx context.Context) (err error) {
		resp, err = a.E.Cli.Txn(ctx).Then(t.Then...).Commit()
		return err
	})
	if err != nil || a.entryUnsure {
		// A txn of unknown outcome may put our entry after this delete
		// (a proposal forwarded by a member that just stopped leading
		// can reach the new leader after our later ones), or the delete
		// failed: sweep the entry later, if it is still ours, so that it
		// does not block the waiters behind it while the node runs (its
		// waiter lease would remove it only then). Its key is not reused
		// meanwhile.
		if a.entry != "" {
			for _, k := range a.Kind.EntryKeys(qkey) {
				go a.E.sweepEntry(k, a.entry)
			}
		}
		if err == nil {
			err = errEntryMayReturn
		}
	}
	if err != nil && !errors.Is(err, errEntryMayReturn) {
		a.E.Log.Warn("remove queue entry", "key", qkey, "err", err)
		return nil, err
	}
	for _, r := range holders {
		for _, kv := range r.KVs(resp) {
			if l, ok := a.Granted(ctx, kv); ok {
				return l, err
			}
		}
	}
	if err == nil && a.entry != "" && entry.Deleted(resp) == 0 {
		err = errEntryVanished
	}
	return nil, err
}

// errEntryMayReturn is leave's answer when the queue entry is gone but a
// txn of unknown outcome may put it again: its key must not be reused.
var errEntryMayReturn = errors.New("the queue entry may be put again by a txn of unknown outcome")

// errEntryVanished is leave's answer when the queue entry was gone before
// it deleted it, and the lock is not ours: a release may have granted it
// to us, and the hold ended before we learnt of it (its lease ran out
// while this node was cut off, say). Whether the acquire took effect is
// unknown.
var errEntryVanished = errors.New("the queue entry was gone before the waiter left: a release may have granted it a hold that has ended since")

// sweepEntry deletes the queue entry at key if it still holds value, once
// any txn of unknown outcome that puts it has been applied or lost: such
// a txn is in etcd's log within an op timeout, or never will be. It tries
// until etcd answers, an op timeout apart, or the engine closes: an entry
// left behind would head its queue, and keep every waiter behind it from
// the lock, for as long as the node's waiter lease lives (the node's
// life). The delete compares the value, so a try after one that did
// delete it changes nothing.
func (e *Engine) sweepEntry(key, value string) {
	t := time.NewTimer(e.Cfg.OpTimeout)
	defer t.Stop()
	for try := 0; ; try++ {
		select {
		case <-t.C:
		case <-e.Stop.Done():
			return
		}
		ctx, done := e.Etcd.CleanupCtx()
		err := e.Etcd.RetryCleanup(ctx, func(ctx context.Context) error {
			_, err := e.Cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", value)).Then(clientv3.OpDelete(key)).Commit()
			return err
		})
		done()
		if err == nil {
			return
		}
		if try == 0 {
			e.Log.Warn("sweep queue entry; trying again until etcd answers", "key", key, "err", err)
		}
		t.Reset(e.Cfg.OpTimeout)
	}
}
