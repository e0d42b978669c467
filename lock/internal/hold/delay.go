package hold

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// ErrNotDelayed means a lock is under no lock-delay: it is held, free, or
// its delay has run out.
var ErrNotDelayed = errors.New("lock not delayed")

// DelayedError is ErrNotHeld for a free lock that its last hold's guard
// keeps free until Until: a lock-delay, after the hold ended by Cause
// (expired, session_expired or revoked), or its at-least window, after
// any end (Cause released, for a release inside it).
type DelayedError struct {
	Name  string
	Until time.Time
	Cause store.EventType
}

func (e *DelayedError) Error() string {
	if e.Cause == store.EventReleased {
		return fmt.Sprintf("lock not held: kept free until %s by its last hold's at-least window (min_hold), which it was released inside", e.Until.Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("lock not held: under lock-delay until %s, after its last hold %s", e.Until.Format(time.RFC3339Nano), CauseText(e.Cause))
}

// Unwrap makes errors.Is(err, ErrNotHeld) hold.
func (e *DelayedError) Unwrap() error { return ErrNotHeld }

// CauseText says how a hold ended, for people.
func CauseText(c store.EventType) string {
	switch c {
	case store.EventRevoked:
		return "was revoked"
	case store.EventSessionExpired:
		return "ended with its session"
	case store.EventReleased:
		return "was released inside its at-least window (min_hold)"
	default:
		return "expired"
	}
}

// Delay is a free lock under lock-delay.
type Delay struct {
	Name  string
	Until time.Time
	Cause store.EventType
}

// ActiveDelay decodes a lock-delay guard and returns the delay it imposes
// now, if any: a guard without Until belongs to a hold still running.
func ActiveDelay(name string, kv *mvccpb.KeyValue, now time.Time) (*DelayedError, bool) {
	var dr DelayRecord
	if json.Unmarshal(kv.Value, &dr) != nil || dr.Until == nil || !now.Before(*dr.Until) {
		return nil, false
	}
	return &DelayedError{Name: name, Until: *dr.Until, Cause: dr.Cause}, true
}
