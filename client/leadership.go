package client

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"
)

// CampaignOptions say how to campaign. Every field is optional.
type CampaignOptions struct {
	// Candidate labels the leader for people and the audit trail; empty
	// means the client's address as the server sees it. Identity is the
	// token.
	Candidate string
	// Value is what the leader publishes (its address, say): anything
	// encoding/json can encode, at most 4 KiB of JSON; a json.RawMessage
	// goes as is; nil is null.
	Value any
	// TTL is the leadership's lease TTL, 2s to 24h; 0 means the server's
	// default (30s). It must be 0 with Session: the session's TTL applies.
	TTL time.Duration
	// Wait waits in line to lead for up to this long, first come first
	// served across the cluster; 0 fails at once with ErrElectionHeld
	// when someone leads. A Wait over MaxRequestWait (5m), up to
	// WaitForever, needs Session.
	Wait time.Duration
	// LockDelay: when this leadership ends by expiry or revoke (not by a
	// resignation), nobody leads for this long.
	LockDelay time.Duration
	// MinHold is the leadership's at-least window, up to 24h: however
	// early it ends (a resignation, an expiry, a revoke), nobody else
	// leads before its ElectedAt plus MinHold.
	MinHold time.Duration
	// Session puts the leadership in a session: it lives and dies with it.
	Session string
	// Metadata is shown with the leader: at most 16 pairs, 4 KiB in all.
	Metadata map[string]string
}

// Campaign makes the caller the leader of the election name, waiting in
// line up to o.Wait, and returns its leadership. The leadership renews
// itself in the background until Resign, at about a third of its TTL,
// exactly as a *Lock does. It fails with ErrElectionHeld, with the leader
// in the *Error, when the wait runs out.
//
// Leadership can still be lost, by expiry during a pause or a partition or
// by an operator's revoke: Lost tells. Only work checked against Token, by
// whatever the leader writes to (a fenced write naming the election, see
// PutFencedWith), is safe from a leader deposed without knowing.
//
// Campaign is retried as Acquire is: not after a 503 or a broken
// connection outside a session (the outcome is then unknown; a leadership
// won that way expires after its TTL), and retried in a session.
func (c *Client) Campaign(ctx context.Context, name string, o CampaignOptions) (*Leadership, error) {
	op := fmt.Sprintf("campaign for %q", name)
	var (
		info   *LeaderInfo
		status int
		sent   time.Time
	)
	err := c.inLine(ctx, op, o.Session, o.Wait, func(ctx context.Context, wait time.Duration, keep bool) (err error) {
		info, status, sent, err = c.campaign(ctx, op, name, o, wait, keep)
		return err
	}, func() { _ = c.ResignLeadership(context.WithoutCancel(ctx), name, info.Token) })
	if err != nil {
		return nil, err
	}
	ld := &Leadership{hold: newHold(c, holdKey{thing{kindElection, info.Name}, info.Token}), info: *info}
	ld.hold.ops = holdOps{renew: ld.renew, release: ld.resign}
	g := grant{status: status, sent: sent, ttl: info.TTL, left: info.ExpiresAt.Sub(info.ElectedAt), inSession: o.Session != ""}
	if err := ld.hold.start(ctx, op, g); err != nil {
		return nil, err
	}
	return ld, nil
}

// Leadership is an election won: it renews itself until Resign or until
// it is lost. Its methods are safe for concurrent use. It is kept by the
// same machinery as a *Lock (a leadership is a hold of the election), so
// the client's clock, renewals and the Client's event stream decide when
// it is lost, as Lock describes.
type Leadership struct {
	hold *hold

	mu   sync.Mutex
	info LeaderInfo
	// proclaims counts Proclaim calls begun, so that a renew answered
	// before a proclaim does not bring an older value back.
	proclaims uint64
}

// renew is the hold's renewal: by token, recording the answer.
func (ld *Leadership) renew(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	ld.mu.Lock()
	seq := ld.proclaims
	ld.mu.Unlock()
	info, err := ld.hold.c.renewLeadership(ctx, ld.hold.key.name, ld.hold.key.token, timeout)
	if err != nil {
		return 0, err
	}
	ld.mu.Lock()
	defer ld.mu.Unlock()
	if ld.proclaims != seq {
		info.Value = ld.info.Value
	}
	ld.setLocked(info)
	return info.TTL, nil
}

// setLocked records an answer about the leadership, keeping what it
// leaves out.
func (ld *Leadership) setLocked(info *LeaderInfo) {
	old := ld.info
	ld.info = *info
	ld.info.Candidates = nil
	if ld.info.Metadata == nil {
		ld.info.Metadata = old.Metadata
	}
	if ld.info.ElectedAt.IsZero() {
		ld.info.ElectedAt = old.ElectedAt
	}
}

func (ld *Leadership) resign(ctx context.Context) error {
	return ld.hold.c.ResignLeadership(ctx, ld.hold.key.name, ld.hold.key.token)
}

// Name returns the election's name.
func (ld *Leadership) Name() string { return ld.hold.key.name }

// Token returns the leadership's fencing token. Pass it with every write
// the leader makes; it never changes while the leadership lasts.
func (ld *Leadership) Token() int64 { return ld.hold.key.token }

// Term returns the leadership's term: the count of leaders the election
// has had, this one included.
func (ld *Leadership) Term() int64 {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return ld.info.Term
}

// Value returns the leader's value as the latest campaign, renew or
// Proclaim answer described it.
func (ld *Leadership) Value() json.RawMessage {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return append(json.RawMessage(nil), ld.info.Value...)
}

// Info returns the leadership as the latest campaign, renew or proclaim
// described it.
func (ld *Leadership) Info() LeaderInfo {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	i := ld.info
	i.Metadata = maps.Clone(i.Metadata)
	i.Value = append(json.RawMessage(nil), i.Value...)
	return i
}

// Lost returns a channel that is closed as soon as the leadership is known
// lost: the audit trail recorded its end (revoked, expired, its session
// expired, or resigned by its token from elsewhere), which the Client's
// event stream delivers within milliseconds; a renew was answered
// no_leader or token_mismatch; or the TTL ran out by the client's clock
// with no renew confirmed. Stop leading when it closes. Err says why. A
// Resign does not close it, unless the resignation finds it lost.
func (ld *Leadership) Lost() <-chan struct{} { return ld.hold.lost }

// Done returns a channel that is closed when the leadership is no longer
// kept: when it is lost, or resigned.
func (ld *Leadership) Done() <-chan struct{} { return ld.hold.done }

// Err returns why the leadership was lost, a *LostError wrapping
// ErrLockLost and the cause (ErrNoLeader for a revoke, an expiry or a
// resignation elsewhere; ErrTokenMismatch; ErrUnavailable…), or nil while
// it lasts or if it was resigned cleanly.
func (ld *Leadership) Err() error { return ld.hold.lostErr() }

// YieldRequested returns a channel that delivers each request that this
// leader resign (YieldLeadership), as Lock.YieldRequested does a lock's.
func (ld *Leadership) YieldRequested() <-chan YieldRequest { return ld.hold.yieldRequested() }

// Proclaim sets the leader's value, keeping token and term; observers are
// told. It returns ErrNoLeader or ErrTokenMismatch when the leadership is
// over (Lost fires soon after, by the renewal or the event stream).
func (ld *Leadership) Proclaim(ctx context.Context, value any) error {
	ld.mu.Lock()
	ld.proclaims++
	ld.mu.Unlock()
	info, err := ld.hold.c.Proclaim(ctx, ld.hold.key.name, ld.hold.key.token, value)
	if err != nil {
		return err
	}
	ld.mu.Lock()
	defer ld.mu.Unlock()
	ld.setLocked(info)
	return nil
}

// Transfer hands the leadership to the candidate to, which must be
// waiting in line, ahead of the others (Client.TransferLeadership), and
// returns the new leader's. The leadership is then over, as after
// Resign: Done is closed, Lost is not. When the transfer is refused and
// the leadership goes on (ErrCandidateNotWaiting, ErrElectionHeld inside
// its at-least window) or gets no answer, it keeps renewing itself;
// when it was lost before, the error wraps ErrLockLost.
func (ld *Leadership) Transfer(ctx context.Context, to string) (*LeaderInfo, error) {
	var next *LeaderInfo
	err := ld.hold.handOn(ctx, func(ctx context.Context) (err error) {
		next, err = ld.hold.c.TransferLeadership(ctx, ld.hold.key.name, ld.hold.key.token, to)
		return err
	})
	return next, err
}

// Resign stops the renewal and ends the leadership with its token; the
// first candidate in line leads next. It returns nil when it resigned,
// and an error wrapping ErrLockLost when the leadership was lost before.
// Calling it again returns the same result. When it gets no answer
// (ErrUnavailable, ctx ended), another call tries again; without one, the
// lease runs out after its TTL.
func (ld *Leadership) Resign(ctx context.Context) error { return ld.hold.release(ctx) }
