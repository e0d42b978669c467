package lock

import (
	"context"
	"encoding/json"

	"github.com/baton-dev/baton/lock/internal/fence"
	"github.com/baton-dev/baton/lock/internal/hold"
)

// FencedValue is the content of a fenced register; Holder names the hold
// a fenced write requires (the zero Holder requires none); StaleTokenError
// is a write's refusal for a token below the register's. They are
// package fence's (lock/internal/fence), which keeps the registers.
type (
	FencedValue     = fence.Value
	Holder          = fence.Holder
	StaleTokenError = fence.StaleTokenError
)

// The errors of fenced values are package fence's (lock/internal/fence),
// which says what each means. ErrValueTooLarge is also an election's value
// above MaxValueBytes.
var (
	ErrStaleToken    = fence.ErrStaleToken
	ErrNotHolder     = fence.ErrNotHolder
	ErrNotFound      = fence.ErrNotFound
	ErrValueTooLarge = fence.ErrValueTooLarge
	ErrUnknownToken  = fence.ErrUnknownToken
)

// PutFenced stores value in resource if token is at least the largest
// token any earlier write to resource carried; equal tokens are accepted so
// a holder can write many times. With lock set, the write also requires
// that token holds lock at that moment. The check and the write are one
// etcd transaction. Errors: *StaleTokenError (ErrStaleToken), ErrNotHolder,
// ErrUnknownToken for a token above the current revision (none was ever
// issued); a *LimitError for a value above Config.MaxFencedValueBytes
// (ErrValueTooLarge) or a new resource past Config.MaxFencedValues
// (ErrTooManyFencedValues). Every error leaves the resource as it was.
func (e *Engine) PutFenced(ctx context.Context, resource string, token int64, value json.RawMessage, lock string) (*FencedValue, error) {
	var h Holder
	if lock != "" {
		h = Holder{Kind: KindLock, Name: lock}
	}
	return e.PutFencedHeld(ctx, resource, token, value, h)
}

// PutFencedHeld is PutFenced requiring the hold h, which may be an
// election's: a fenced write may ask that its token be the current
// leader's.
func (e *Engine) PutFencedHeld(ctx context.Context, resource string, token int64, value json.RawMessage, h Holder) (*FencedValue, error) {
	return e.fenced.Put(ctx, resource, token, value, h)
}

// GetFenced returns the value of resource, or ErrNotFound.
func (e *Engine) GetFenced(ctx context.Context, resource string) (*FencedValue, error) {
	return e.fenced.Get(ctx, resource)
}

// ResetFenced removes resource's value and its largest-token record, so
// the next write with any issued token is accepted: the way back for a
// register that a wrong token (a typo, a timestamp) pushed past every real
// holder. It is an operator's action, audited as fence_reset (kind fence,
// reason in detail, actor as owner) in the same txn as the removal. It
// returns ErrNotFound when resource holds nothing.
func (e *Engine) ResetFenced(ctx context.Context, resource, reason, actor string) error {
	return e.fenced.Reset(ctx, resource, reason, actor, hold.CredentialOf(ctx))
}
