package clientsuite_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	problems "github.com/baton-dev/baton/problem"
	"github.com/baton-dev/baton/server"
)

// TestErrors_SurviveTheWire provokes each of the server's error codes and
// checks that errors.Is finds the sentinel and errors.As the details.
func TestErrors_SurviveTheWire(t *testing.T) {
	w := newWire(t)
	t.Run("lock_held carries the holder", w.lockHeld)
	t.Run("stale_token carries max_token", w.staleToken)
	t.Run("not_holder", w.notHolder)
	t.Run("token_mismatch", w.tokenMismatch)
	t.Run("not_held", w.notHeld)
	t.Run("not_found", w.notFound)
	t.Run("session_not_found", w.sessionNotFound)
	t.Run("invalid_request names the field", w.invalidRequest)
	t.Run("lock-delay answers with retry_after", w.lockDelay)
	t.Run("an at-least window outlives an early release", w.minHold)
	t.Run("a sentinel matches its code only", w.sentinelMatchesItsCodeOnly)
}

// wire is what TestErrors_SurviveTheWire provokes errors with: a lock
// that w1 holds (lk, of name), and a fenced resource (res) whose largest
// token is that of a later hold.
type wire struct {
	c         *client.Client
	ctx       context.Context
	name, res string
	lk, later *client.Lock
}

func newWire(t *testing.T) *wire {
	_, c, ctx := setup(t)
	w := &wire{c: c, ctx: ctx, name: lockName(t, "l"), res: lockName(t, "r")}
	var err error
	w.lk, err = c.Acquire(ctx, w.name, client.AcquireOptions{Owner: "w1", TTL: 30 * time.Second, Metadata: map[string]string{"host": "db-2"}})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	releaseAtEnd(t, w.lk)
	// A later hold's token raises the resource's maximum above lk's.
	w.later, err = c.Acquire(ctx, lockName(t, "l2"), client.AcquireOptions{Owner: "w3", TTL: 30 * time.Second})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	releaseAtEnd(t, w.later)
	if _, err := c.PutFenced(ctx, w.res, w.later.Token(), map[string]string{"v": "future"}, ""); err != nil {
		t.Fatalf("put fenced: %v", err)
	}
	return w
}

// asError is err as a *client.Error, or the test's end.
func asError(t *testing.T, err error) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v (%T) is not a *client.Error", err, err)
	}
	return e
}

func (w *wire) lockHeld(t *testing.T) {
	_, err := w.c.TryAcquire(w.ctx, w.name, client.AcquireOptions{Owner: "w2"})
	if !errors.Is(err, client.ErrHeld) {
		t.Fatalf("%v, want ErrHeld", err)
	}
	e := asError(t, err)
	h := e.Holder
	if e.Status != http.StatusConflict || e.Code != "lock_held" || h == nil {
		t.Fatalf("%+v", e)
	}
	if h.Owner != "w1" || h.Token != w.lk.Token() || h.Name != w.name || h.TTL != 30*time.Second || h.Metadata["host"] != "db-2" ||
		h.AcquiredAt.IsZero() || !h.ExpiresAt.After(h.AcquiredAt) {
		t.Errorf("holder %+v, want w1's hold with token %d", h, w.lk.Token())
	}
}

func (w *wire) staleToken(t *testing.T) {
	_, err := w.c.PutFenced(w.ctx, w.res, w.lk.Token(), "late", "")
	if !errors.Is(err, client.ErrStaleToken) {
		t.Fatalf("%v, want ErrStaleToken", err)
	}
	if e := asError(t, err); e.MaxToken != w.later.Token() || e.Status != http.StatusConflict {
		t.Errorf("%+v, want max_token %d", e, w.later.Token())
	}
}

func (w *wire) notHolder(t *testing.T) {
	_, err := w.c.PutFenced(w.ctx, lockName(t, "r2"), w.lk.Token()-1, "x", w.name)
	if !errors.Is(err, client.ErrNotHolder) {
		t.Fatalf("%v, want ErrNotHolder", err)
	}
}

func (w *wire) tokenMismatch(t *testing.T) {
	if _, err := w.c.Renew(w.ctx, w.name, w.lk.Token()-1); !errors.Is(err, client.ErrTokenMismatch) {
		t.Errorf("renew: %v, want ErrTokenMismatch", err)
	}
	if err := w.c.Release(w.ctx, w.name, w.lk.Token()-1); !errors.Is(err, client.ErrTokenMismatch) {
		t.Errorf("release: %v, want ErrTokenMismatch", err)
	}
}

func (w *wire) notHeld(t *testing.T) {
	free := lockName(t, "free")
	if _, err := w.c.Get(w.ctx, free); !errors.Is(err, client.ErrNotHeld) || errors.Is(err, client.ErrNotFound) {
		t.Errorf("get: %v, want ErrNotHeld only", err)
	}
	if err := w.c.Release(w.ctx, free, 1); !errors.Is(err, client.ErrNotHeld) {
		t.Errorf("release: %v, want ErrNotHeld", err)
	}
	if err := w.c.Revoke(w.ctx, free, ""); !errors.Is(err, client.ErrNotHeld) {
		t.Errorf("revoke: %v, want ErrNotHeld", err)
	}
}

func (w *wire) notFound(t *testing.T) {
	if _, err := w.c.GetFenced(w.ctx, lockName(t, "nothing")); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("%v, want ErrNotFound", err)
	}
}

func (w *wire) sessionNotFound(t *testing.T) {
	c, ctx := w.c, w.ctx
	for _, err := range []error{
		func() error { _, err := c.GetSession(ctx, "694d2279b4919071"); return err }(),
		func() error { _, err := c.RenewSession(ctx, "694d2279b4919071"); return err }(),
		c.DeleteSession(ctx, "694d2279b4919071"),
		func() error {
			_, err := c.Acquire(ctx, lockName(t, "s"), client.AcquireOptions{Session: "694d2279b4919071"})
			return err
		}(),
	} {
		if !errors.Is(err, client.ErrSessionNotFound) {
			t.Errorf("%v, want ErrSessionNotFound", err)
		}
	}
}

func (w *wire) invalidRequest(t *testing.T) {
	_, err := w.c.Acquire(w.ctx, lockName(t, "x"), client.AcquireOptions{TTL: time.Second})
	if !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("%v, want ErrInvalid", err)
	}
	if e := asError(t, err); e.Field != "ttl" || e.Status != http.StatusBadRequest || e.Detail == "" {
		t.Errorf("%+v, want field ttl", e)
	}
	_, err = w.c.Get(w.ctx, "no spaces allowed")
	if e := asError(t, err); !errors.Is(err, client.ErrInvalid) || e.Field != "name" {
		t.Errorf("%v (%+v), want ErrInvalid on name", err, e)
	}
}

func (w *wire) lockDelay(t *testing.T) {
	d := lockName(t, "delay")
	lk, err := w.c.Acquire(w.ctx, d, client.AcquireOptions{LockDelay: 30 * time.Second})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if err := w.c.Revoke(w.ctx, d, "test"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	_, err = w.c.TryAcquire(w.ctx, d, client.AcquireOptions{})
	e := asError(t, err)
	if !errors.Is(err, client.ErrHeld) || e.RetryAfter <= 0 || e.RetryAfter > 30*time.Second {
		t.Errorf("%v (%+v), want ErrHeld with a retry after of at most 30s", err, e)
	}
	_ = lk.Release(w.ctx)
}

func (w *wire) minHold(t *testing.T) {
	d := lockName(t, "window")
	lk, err := w.c.Acquire(w.ctx, d, client.AcquireOptions{MinHold: time.Minute})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if lk.Info().MinHold != time.Minute {
		t.Errorf("MinHold = %s, want 1m", lk.Info().MinHold)
	}
	if err := lk.Release(w.ctx); err != nil {
		t.Fatalf("release inside the window: %v", err)
	}
	_, err = w.c.TryAcquire(w.ctx, d, client.AcquireOptions{})
	e := asError(t, err)
	if !errors.Is(err, client.ErrHeld) || e.RetryAfter <= 0 || e.RetryAfter > time.Minute {
		t.Errorf("%v (%+v), want ErrHeld with a retry after of at most 1m", err, e)
	}
	p, err := w.c.AcquirePermit(w.ctx, d, 1, client.PermitOptions{MinHold: time.Minute})
	if err != nil {
		t.Fatalf("permit: %v", err)
	}
	if p.Info().MinHold != time.Minute {
		t.Errorf("permit MinHold = %s, want 1m", p.Info().MinHold)
	}
	_ = p.Release(w.ctx)
}

func (w *wire) sentinelMatchesItsCodeOnly(t *testing.T) {
	_, err := w.c.TryAcquire(w.ctx, w.name, client.AcquireOptions{})
	for _, s := range []error{client.ErrNotHeld, client.ErrTokenMismatch, client.ErrUnavailable, client.ErrInvalid, client.ErrLockLost} {
		if errors.Is(err, s) {
			t.Errorf("%v matches %v", err, s)
		}
	}
}

func TestError_MapsCodesAndServerErrors(t *testing.T) {
	for _, tc := range []struct {
		e    client.Error
		want error
	}{
		{client.Error{Status: 409, Code: "lock_held"}, client.ErrHeld},
		{client.Error{Status: 404, Code: "not_held"}, client.ErrNotHeld},
		{client.Error{Status: 409, Code: "token_mismatch"}, client.ErrTokenMismatch},
		{client.Error{Status: 409, Code: "stale_token"}, client.ErrStaleToken},
		{client.Error{Status: 409, Code: "not_holder"}, client.ErrNotHolder},
		{client.Error{Status: 404, Code: "session_not_found"}, client.ErrSessionNotFound},
		{client.Error{Status: 404, Code: "not_found"}, client.ErrNotFound},
		{client.Error{Status: 400, Code: "invalid_request"}, client.ErrInvalid},
		{client.Error{Status: 503, Code: "unavailable"}, client.ErrUnavailable},
		{client.Error{Status: 503, Code: "shutting_down"}, client.ErrUnavailable},
		{client.Error{Status: 502}, client.ErrUnavailable},
		{client.Error{Status: 500, Code: "internal"}, client.ErrUnavailable},
	} {
		if !errors.Is(&tc.e, tc.want) {
			t.Errorf("%v does not match %v", &tc.e, tc.want)
		}
	}
	if errors.Is(&client.Error{Status: 404, Code: "route_not_found"}, client.ErrNotFound) {
		t.Error("route_not_found (a wrong URL) matches ErrNotFound (no such fenced value)")
	}
}

// TestErrors_EveryCodeTheServerAnswersHasASentinel holds the client to the
// server's vocabulary: every code the server can answer (server.Codes:
// the api's error table, the server's own and the router's errors) has a
// sentinel that errors.Is matches, and none matches another code's
// sentinel.
func TestErrors_EveryCodeTheServerAnswersHasASentinel(t *testing.T) {
	for _, code := range server.Codes() {
		s := client.Sentinel(code)
		if s == nil {
			t.Errorf("the server answers %q; the client has no sentinel for it", code)
			continue
		}
		info, ok := problems.Lookup(code)
		if !ok {
			t.Errorf("the server answers %q, which package problem does not list", code)
			continue
		}
		e := &client.Error{Status: info.Status, Code: string(code)}
		if !errors.Is(e, s) {
			t.Errorf("%v does not match its own sentinel %v", e, s)
		}
		for _, other := range problems.All() {
			if o := client.Sentinel(other.Code); other.Code != code && o != client.ErrUnavailable && o != client.ErrForbidden && errors.Is(e, o) {
				t.Errorf("%v matches %q's sentinel too", e, other.Code)
			}
		}
	}
}

// TestErrors_CapsAndRateLimitsHaveNamedSentinels: the codes the caps
// answer are matched by name, as callers write them.
func TestErrors_CapsAndRateLimitsHaveNamedSentinels(t *testing.T) {
	for _, tc := range []struct {
		e    client.Error
		want error
	}{
		{client.Error{Status: 429, Code: "too_many_waiters"}, client.ErrTooManyWaiters},
		{client.Error{Status: 409, Code: "too_many_locks_in_session"}, client.ErrTooManyLocksInSession},
		{client.Error{Status: 429, Code: "too_many_sessions"}, client.ErrTooManySessions},
		{client.Error{Status: 429, Code: "too_many_streams"}, client.ErrTooManyStreams},
		{client.Error{Status: 503, Code: "too_many_streams"}, client.ErrTooManyStreams},
		{client.Error{Status: 503, Code: "too_many_streams"}, client.ErrUnavailable},
		{client.Error{Status: 429, Code: "rate_limited"}, client.ErrRateLimited},
		{client.Error{Status: 403, Code: "cross_origin"}, client.ErrForbidden},
	} {
		if !errors.Is(&tc.e, tc.want) {
			t.Errorf("%v does not match %v", &tc.e, tc.want)
		}
	}
	if errors.Is(&client.Error{Status: 429, Code: "rate_limited"}, client.ErrUnavailable) {
		t.Error("rate_limited (retry later, here) matches ErrUnavailable")
	}
}

// TestError_OneLine: the call is named once, even though the server's
// detail names it too.
func TestError_OneLine(t *testing.T) {
	_, c, ctx := setup(t)
	name := lockName(t, "free")
	err := c.Revoke(ctx, name, "")
	want := fmt.Sprintf("revoke %q: lock not held (404 not_held)", name)
	if err == nil || err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}
