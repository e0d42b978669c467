package lock

import (
	"context"

	"github.com/baton-dev/baton/lock/internal/recovery"
)

// RecoverResult is what Recover did; a *StillFullError (ErrStillFull) is
// its refusal to disarm a store that stays full. Both are package
// recovery's (lock/internal/recovery).
type (
	RecoverResult  = recovery.Result
	StillFullError = recovery.StillFullError
)

// ErrStillFull means Recover compacted and defragmented, but the data
// kept leaves too little room under the quota to disarm the alarm; the
// error is a *StillFullError saying what holds the space.
var ErrStillFull = recovery.ErrStillFull

// Recover frees etcd's space and lifts its NOSPACE alarm, which etcd
// raises when its backend reaches the quota and which blocks every write
// until disarmed. It compacts the history to the current revision (watch
// history before it is gone; baton's audit trail is kept in keys, not in
// history), defragments every member one at a time (each member blocks
// while its backend file is rewritten, and only a defragmentation gives
// the space back to the quota, which measures the file), then disarms the
// NOSPACE alarms. It is safe to call at any time.
//
// Members are reached thus: the engine's own member through the
// in-process client; the others through Config.DialMember at their
// client URLs (or, over external etcd, through the engine's client at
// those URLs). A member that cannot be reached fails the call with
// ErrUnavailable and leaves the alarm raised, since that member's full
// file would raise it again at its next write; call again once it is.
//
// When what is kept still fills more than nine tenths of the quota it
// returns a *StillFullError (ErrStillFull) and leaves the alarm raised.
func (e *Engine) Recover(ctx context.Context) (*RecoverResult, error) {
	return recovery.New(recovery.Config{
		Client: e.core.Cli, Etcd: e.core.Etcd, Keys: e.core.Keys, Log: e.core.Log, BackendQuota: e.core.Cfg.BackendQuota,
		Embedded: e.core.Cfg.Embedded, DialMember: e.core.Cfg.DialMember, OpTimeout: e.core.Cfg.OpTimeout, CheckLeader: e.CheckLeader,
	}).Run(ctx)
}
