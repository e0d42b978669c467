package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// MaxRequestWait is the longest wait one acquire request carries: the
// server's cap. A longer Wait, up to WaitForever, is a run of requests in
// the options' Session: each that runs out keeps the session's place in
// line (the server's keep_place), and the next waits from there, on
// whichever node it reaches. A release meanwhile grants the hold to the
// session, and the next request answers with it.
const MaxRequestWait = 5 * time.Minute

// WaitForever as a Wait waits in line until the hold is granted, the
// session ends, or ctx does: as ZooKeeper's and etcd's election recipes
// wait for as long as their session lives. It needs a Session.
const WaitForever = time.Duration(math.MaxInt64)

// inLine runs an acquire that waits up to total, by send, which asks with
// wait and, when keep is set, keep_place. A total that fits one request
// is one request. A longer one needs session, which inLine renews until
// it returns (once granted, the hold renews it); it ends at the first
// answer that is not a kept place. If ctx ends between two requests, a
// last one without keep_place gives the place up, and undo ends what that
// one may have been granted.
func (c *Client) inLine(ctx context.Context, op, session string, total time.Duration, send func(ctx context.Context, wait time.Duration, keep bool) error, undo func()) error {
	if total <= c.maxWait {
		return send(ctx, total, false)
	}
	if session == "" {
		return fmt.Errorf("%s: a Wait over %s needs a Session, which keeps the place in line between requests: %w", op, c.maxWait, ErrInvalid)
	}
	stop := c.keepSession(ctx, session)
	defer stop()
	var deadline time.Time
	if total != WaitForever {
		deadline = time.Now().Add(total)
	}
	for {
		wait, keep := c.maxWait, true
		if !deadline.IsZero() {
			if left := time.Until(deadline); left <= c.maxWait {
				wait, keep = max(left, time.Millisecond), false
			}
		}
		err := send(ctx, wait, keep)
		var e *Error
		if !keep || !errors.As(err, &e) || !e.PlaceKept {
			return err
		}
		if ctx.Err() != nil {
			gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
			if send(gctx, time.Millisecond, false) == nil {
				undo()
			}
			cancel()
			return fmt.Errorf("%s: %w", op, ctx.Err())
		}
	}
}

// keepSession renews the session id at a third of its TTL until the
// returned stop is called or ctx ends. A renewal that fails is tried
// again at the next turn; a session that is gone ends the wait by itself
// (the server answers session_not_found).
func (c *Client) keepSession(ctx context.Context, id string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		every := time.Second
		for {
			if s, err := c.RenewSession(ctx, id); err == nil {
				every = max(s.TTL/3, time.Second)
			} else if errors.Is(err, ErrSessionNotFound) {
				return
			}
			t := time.NewTimer(every)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
