package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ClearDelay lifts the lock-delay of a free lock, so it can be acquired at
// once; an operator's remedy for a delay set by mistake. It is audited as
// delay_cleared (reason in detail, actor as owner) in the same txn. It
// returns ErrNotDelayed when the lock is under no delay.
func (e *Engine) ClearDelay(ctx context.Context, name, reason, actor string) error {
	if err := store.CheckName("name", name); err != nil {
		return err
	}
	if len(reason) > MaxReasonLen {
		return hold.Invalid("reason", "must be at most %d bytes", MaxReasonLen)
	}
	lkey, gkey := e.core.Keys.Lock(name), e.core.Keys.Delay(name)
	var read store.Txn
	lockRead, guardRead := read.OnSuccess(clientv3.OpGet(lkey, clientv3.WithKeysOnly())), read.OnSuccess(clientv3.OpGet(gkey))
	for range core.MaxImmediateRetries {
		octx, done := e.core.Etcd.Op(ctx)
		resp, err := e.core.Cli.Txn(octx).Then(read.Then...).Commit()
		done()
		if err != nil {
			return e.core.Etcd.Err(ctx, "read lock-delay", err)
		}
		guard := guardRead.KVs(resp)
		if len(lockRead.KVs(resp)) > 0 || len(guard) == 0 {
			return fmt.Errorf("clear lock-delay of %q: %w", name, ErrNotDelayed)
		}
		d, ok := hold.ActiveDelay(name, guard[0], time.Now())
		if !ok {
			return fmt.Errorf("clear lock-delay of %q: %w", name, ErrNotDelayed)
		}
		ev := Event{
			Time: store.NowUTC(), Type: EventDelayCleared, Lock: name, Owner: actor, Credential: hold.CredentialOf(ctx),
			Detail: fmt.Sprintf("lock-delay until %s lifted: %s", d.Until.Format(time.RFC3339Nano), reason),
		}
		var tr *clientv3.TxnResponse
		octx, done = e.core.Etcd.Op(ctx)
		tr, err = e.core.Cli.Txn(octx).If(
			clientv3.Compare(clientv3.ModRevision(gkey), "=", guard[0].ModRevision),
			clientv3.Compare(clientv3.CreateRevision(lkey), "=", 0),
		).Then(
			clientv3.OpDelete(gkey),
			clientv3.OpPut(e.core.Keys.LockAudit(name)+hold.NewHoldID()+"/d", store.MustJSON(ev)),
		).Commit()
		done()
		if err != nil {
			return e.core.Etcd.Err(ctx, "clear lock-delay", err)
		}
		if tr.Succeeded {
			e.core.Metrics.Recorded(EventDelayCleared, 1)
			return nil
		}
		// The guard or the lock changed meanwhile: look again.
	}
	return fmt.Errorf("clear lock-delay of %q: the lock changes too fast: %w", name, ErrUnavailable)
}
