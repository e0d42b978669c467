package client_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/client"
	problems "github.com/baton-dev/baton/problem"
)

// TestErrors_SurviveTheWire provokes each of the server's error codes and
// checks that errors.Is finds the sentinel and errors.As the details.
func TestErrors_SurviveTheWire(t *testing.T) {
	f := newFront(t)
	c := newClient(t, f.URL)
	ctx := ctxFor(t, time.Minute)
	name := lockName(t, "l")
	res := lockName(t, "r")

	lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w1", TTL: 30 * time.Second, Metadata: map[string]string{"host": "db-2"}})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	releaseAtEnd(t, lk)
	// A later hold's token raises the resource's maximum above lk's.
	later, err := c.Acquire(ctx, lockName(t, "l2"), client.AcquireOptions{Owner: "w3", TTL: 30 * time.Second})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	releaseAtEnd(t, later)
	if _, err := c.PutFenced(ctx, res, later.Token(), map[string]string{"v": "future"}, ""); err != nil {
		t.Fatalf("put fenced: %v", err)
	}

	asError := func(t *testing.T, err error) *client.Error {
		t.Helper()
		var e *client.Error
		if !errors.As(err, &e) {
			t.Fatalf("%v (%T) is not a *client.Error", err, err)
		}
		return e
	}

	t.Run("lock_held carries the holder", func(t *testing.T) {
		_, err := c.TryAcquire(ctx, name, client.AcquireOptions{Owner: "w2"})
		if !errors.Is(err, client.ErrHeld) {
			t.Fatalf("%v, want ErrHeld", err)
		}
		e := asError(t, err)
		h := e.Holder
		if e.Status != http.StatusConflict || e.Code != "lock_held" || h == nil {
			t.Fatalf("%+v", e)
		}
		if h.Owner != "w1" || h.Token != lk.Token() || h.Name != name || h.TTL != 30*time.Second || h.Metadata["host"] != "db-2" ||
			h.AcquiredAt.IsZero() || !h.ExpiresAt.After(h.AcquiredAt) {
			t.Errorf("holder %+v, want w1's hold with token %d", h, lk.Token())
		}
	})
	t.Run("stale_token carries max_token", func(t *testing.T) {
		_, err := c.PutFenced(ctx, res, lk.Token(), "late", "")
		if !errors.Is(err, client.ErrStaleToken) {
			t.Fatalf("%v, want ErrStaleToken", err)
		}
		if e := asError(t, err); e.MaxToken != later.Token() || e.Status != http.StatusConflict {
			t.Errorf("%+v, want max_token %d", e, later.Token())
		}
	})
	t.Run("not_holder", func(t *testing.T) {
		_, err := c.PutFenced(ctx, lockName(t, "r2"), lk.Token()-1, "x", name)
		if !errors.Is(err, client.ErrNotHolder) {
			t.Fatalf("%v, want ErrNotHolder", err)
		}
	})
	t.Run("token_mismatch", func(t *testing.T) {
		if _, err := c.Renew(ctx, name, lk.Token()-1); !errors.Is(err, client.ErrTokenMismatch) {
			t.Errorf("renew: %v, want ErrTokenMismatch", err)
		}
		if err := c.Release(ctx, name, lk.Token()-1); !errors.Is(err, client.ErrTokenMismatch) {
			t.Errorf("release: %v, want ErrTokenMismatch", err)
		}
	})
	t.Run("not_held", func(t *testing.T) {
		free := lockName(t, "free")
		if _, err := c.Get(ctx, free); !errors.Is(err, client.ErrNotHeld) || errors.Is(err, client.ErrNotFound) {
			t.Errorf("get: %v, want ErrNotHeld only", err)
		}
		if err := c.Release(ctx, free, 1); !errors.Is(err, client.ErrNotHeld) {
			t.Errorf("release: %v, want ErrNotHeld", err)
		}
		if err := c.Revoke(ctx, free, ""); !errors.Is(err, client.ErrNotHeld) {
			t.Errorf("revoke: %v, want ErrNotHeld", err)
		}
	})
	t.Run("not_found", func(t *testing.T) {
		if _, err := c.GetFenced(ctx, lockName(t, "nothing")); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("%v, want ErrNotFound", err)
		}
	})
	t.Run("session_not_found", func(t *testing.T) {
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
	})
	t.Run("invalid_request names the field", func(t *testing.T) {
		_, err := c.Acquire(ctx, lockName(t, "x"), client.AcquireOptions{TTL: time.Second})
		if !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("%v, want ErrInvalid", err)
		}
		if e := asError(t, err); e.Field != "ttl" || e.Status != http.StatusBadRequest || e.Detail == "" {
			t.Errorf("%+v, want field ttl", e)
		}
		_, err = c.Get(ctx, "no spaces allowed")
		if e := asError(t, err); !errors.Is(err, client.ErrInvalid) || e.Field != "name" {
			t.Errorf("%v (%+v), want ErrInvalid on name", err, e)
		}
	})
	t.Run("lock-delay answers with retry_after", func(t *testing.T) {
		d := lockName(t, "delay")
		lk, err := c.Acquire(ctx, d, client.AcquireOptions{LockDelay: 30 * time.Second})
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		if err := c.Revoke(ctx, d, "test"); err != nil {
			t.Fatalf("revoke: %v", err)
		}
		_, err = c.TryAcquire(ctx, d, client.AcquireOptions{})
		e := asError(t, err)
		if !errors.Is(err, client.ErrHeld) || e.RetryAfter <= 0 || e.RetryAfter > 30*time.Second {
			t.Errorf("%v (%+v), want ErrHeld with a retry after of at most 30s", err, e)
		}
		_ = lk.Release(ctx)
	})
	t.Run("a sentinel matches its code only", func(t *testing.T) {
		_, err := c.TryAcquire(ctx, name, client.AcquireOptions{})
		for _, s := range []error{client.ErrNotHeld, client.ErrTokenMismatch, client.ErrUnavailable, client.ErrInvalid, client.ErrLockLost} {
			if errors.Is(err, s) {
				t.Errorf("%v matches %v", err, s)
			}
		}
	})
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
// server's vocabulary: every code the api can answer (its error table and
// the router's own errors) has a sentinel that errors.Is matches, and
// none matches another code's sentinel.
func TestErrors_EveryCodeTheServerAnswersHasASentinel(t *testing.T) {
	for _, code := range api.Codes() {
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
	f := newFront(t)
	c := newClient(t, f.URL)
	name := lockName(t, "free")
	err := c.Revoke(ctxFor(t, time.Minute), name, "")
	want := fmt.Sprintf("revoke %q: lock not held (404 not_held)", name)
	if err == nil || err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}
