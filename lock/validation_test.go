package lock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/trail"
)

// acquireWith returns a call acquiring a valid request changed by mod.
func acquireWith(mod func(r *lock.AcquireRequest)) func(context.Context, *lock.Engine) error {
	return func(ctx context.Context, e *lock.Engine) error {
		r := lock.AcquireRequest{Name: "ok", Owner: "w1"}
		mod(&r)
		_, _, err := e.Acquire(ctx, r)
		return err
	}
}

func metadataPairs(n, valueLen int) map[string]string {
	md := map[string]string{}
	for i := range n {
		md[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", valueLen)
	}
	return md
}

func TestValidation_BadInputIsRejectedAndWritesNothing(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	cli := m.Client()
	leasesBefore := leaseCount(t, cli)

	cases := append(append(badAcquires(), badLockCalls()...), badReadsAndWrites()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(ctx, e)
			if !errors.Is(err, lock.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			var ie *lock.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("got %T %v, want *lock.InvalidError", err, err)
			}
			if ie.Field != tc.field {
				t.Fatalf("field = %q (%s), want %q", ie.Field, ie.Reason, tc.field)
			}
			if ie.Reason == "" {
				t.Fatalf("InvalidError for %q has no reason", ie.Field)
			}
		})
	}

	// Nothing but the recorder's cursor may exist: no lock, queue, audit,
	// session, delay or fenced key, and no lease.
	for _, k := range holdtest.KeysUnder(t, cli, prefix) {
		if !strings.HasPrefix(k, "meta/") {
			t.Errorf("rejected requests left key %s%s in etcd", prefix, k)
		}
	}
	if n := leaseCount(t, cli); n != leasesBefore {
		t.Errorf("rejected requests left %d leases, had %d before", n, leasesBefore)
	}
}

func TestValidation_BoundaryValuesAreAccepted(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	md := metadataPairs(lock.MaxMetadataPairs, 0)
	// 16 pairs of 3-byte keys; spread the rest of the 4 KiB over the values.
	per := (lock.MaxMetadataBytes - 3*lock.MaxMetadataPairs) / lock.MaxMetadataPairs
	for k := range md {
		md[k] = strings.Repeat("v", per)
	}
	cases := []struct {
		name string
		req  lock.AcquireRequest
	}{
		{"name of 128 characters from every allowed class", lock.AcquireRequest{Name: "Az09._:-" + strings.Repeat("n", lock.MaxNameLen-8), Owner: "w1"}},
		{"owner of 128 non-ASCII printable runes", lock.AcquireRequest{Name: "owner-max", Owner: strings.Repeat("é", lock.MaxOwnerLen)}},
		{"owner with spaces", lock.AcquireRequest{Name: "owner-space", Owner: "worker 1 (10.0.0.1:4711)"}},
		{"metadata of 16 pairs and 4KiB", lock.AcquireRequest{Name: "md-max", Owner: "w1", Metadata: md}},
		{"ttl of 2s", lock.AcquireRequest{Name: "ttl-min", Owner: "w1", TTL: 2 * time.Second}},
		{"ttl of 24h", lock.AcquireRequest{Name: "ttl-max", Owner: "w1", TTL: 24 * time.Hour}},
		{"wait of 5m on a free lock", lock.AcquireRequest{Name: "wait-max", Owner: "w1", Wait: 5 * time.Minute}},
		{"lock_delay of 1h", lock.AcquireRequest{Name: "delay-max", Owner: "w1", LockDelay: time.Hour}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, fresh, err := e.Acquire(ctx, tc.req)
			if err != nil || !fresh {
				t.Fatalf("acquire: %v (fresh=%v)", err, fresh)
			}
			got, err := e.Get(ctx, tc.req.Name)
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if got.Token != l.Token || got.Owner != tc.req.Owner || len(got.Metadata) != len(tc.req.Metadata) {
				t.Fatalf("get = %+v, want the acquired lock %+v", got, l)
			}
			for k, v := range tc.req.Metadata {
				if got.Metadata[k] != v {
					t.Fatalf("metadata[%q] not kept", k)
				}
			}
		})
	}
}

// badInput is a call with one bad argument, and the field it must name.
type badInput struct {
	name  string
	call  func(context.Context, *lock.Engine) error
	field string
}

// badAcquires are acquires with one bad field each.
func badAcquires() []badInput {
	return []badInput{
		{"acquire/name empty", acquireWith(func(r *lock.AcquireRequest) { r.Name = "" }), "name"},
		{"acquire/name too long", acquireWith(func(r *lock.AcquireRequest) { r.Name = strings.Repeat("n", lock.MaxNameLen+1) }), "name"},
		{"acquire/name with slash", acquireWith(func(r *lock.AcquireRequest) { r.Name = "a/b" }), "name"},
		{"acquire/name with space", acquireWith(func(r *lock.AcquireRequest) { r.Name = "a b" }), "name"},
		{"acquire/name with non-ASCII", acquireWith(func(r *lock.AcquireRequest) { r.Name = "schlüssel" }), "name"},
		{"acquire/owner empty", acquireWith(func(r *lock.AcquireRequest) { r.Owner = "" }), "owner"},
		{"acquire/owner too long", acquireWith(func(r *lock.AcquireRequest) { r.Owner = strings.Repeat("o", lock.MaxOwnerLen+1) }), "owner"},
		{"acquire/owner with NUL", acquireWith(func(r *lock.AcquireRequest) { r.Owner = "w\x001" }), "owner"},
		{"acquire/owner with newline", acquireWith(func(r *lock.AcquireRequest) { r.Owner = "w\n1" }), "owner"},
		{"acquire/owner invalid UTF-8", acquireWith(func(r *lock.AcquireRequest) { r.Owner = "w\xff" }), "owner"},
		{"acquire/metadata 17 pairs", acquireWith(func(r *lock.AcquireRequest) { r.Metadata = metadataPairs(lock.MaxMetadataPairs+1, 1) }), "metadata"},
		{"acquire/metadata over 4KiB", acquireWith(func(r *lock.AcquireRequest) { r.Metadata = metadataPairs(2, 2100) }), "metadata"},
		{"acquire/metadata empty key", acquireWith(func(r *lock.AcquireRequest) { r.Metadata = map[string]string{"": "v"} }), "metadata"},
		{"acquire/ttl below 2s", acquireWith(func(r *lock.AcquireRequest) { r.TTL = 1999 * time.Millisecond }), "ttl"},
		{"acquire/ttl negative", acquireWith(func(r *lock.AcquireRequest) { r.TTL = -time.Second }), "ttl"},
		{"acquire/ttl over 24h", acquireWith(func(r *lock.AcquireRequest) { r.TTL = 24*time.Hour + time.Second }), "ttl"},
		{"acquire/ttl with session", acquireWith(func(r *lock.AcquireRequest) { r.Session, r.TTL = "694d2279b4919071", 10*time.Second }), "ttl"},
		{"acquire/wait over 5m", acquireWith(func(r *lock.AcquireRequest) { r.Wait = 5*time.Minute + time.Millisecond }), "wait"},
		{"acquire/wait negative", acquireWith(func(r *lock.AcquireRequest) { r.Wait = -time.Second }), "wait"},
		{"acquire/lock_delay negative", acquireWith(func(r *lock.AcquireRequest) { r.LockDelay = -time.Second }), "lock_delay"},
		{"acquire/session not hex", acquireWith(func(r *lock.AcquireRequest) { r.Session = "not-a-lease" }), "session"},
		{"acquire/session zero", acquireWith(func(r *lock.AcquireRequest) { r.Session = "0" }), "session"},
		{"acquire/session too long", acquireWith(func(r *lock.AcquireRequest) { r.Session = "1234567890abcdef0" }), "session"},
		{"acquire/session above int64", acquireWith(func(r *lock.AcquireRequest) { r.Session = "ffffffffffffffff" }), "session"},
	}
}

// badLockCalls are session and lock calls with one bad argument each.
func badLockCalls() []badInput {
	return []badInput{
		{"session/owner empty", func(ctx context.Context, e *lock.Engine) error { _, err := e.CreateSession(ctx, "", 0); return err }, "owner"},
		{"session/owner non-printable", func(ctx context.Context, e *lock.Engine) error { _, err := e.CreateSession(ctx, "w\t1", 0); return err }, "owner"},
		{"session/ttl below 2s", func(ctx context.Context, e *lock.Engine) error {
			_, err := e.CreateSession(ctx, "w1", time.Second)
			return err
		}, "ttl"},
		{"session/ttl over 24h", func(ctx context.Context, e *lock.Engine) error {
			_, err := e.CreateSession(ctx, "w1", 25*time.Hour)
			return err
		}, "ttl"},

		{"get/name bad", func(ctx context.Context, e *lock.Engine) error { _, err := e.Get(ctx, "a/b"); return err }, "name"},
		{"renew/token zero", func(ctx context.Context, e *lock.Engine) error { _, err := e.Renew(ctx, "ok", 0); return err }, "token"},
		{"renew/name bad", func(ctx context.Context, e *lock.Engine) error { _, err := e.Renew(ctx, "", 5); return err }, "name"},
		{"release/token negative", func(ctx context.Context, e *lock.Engine) error { return e.Release(ctx, "ok", -1) }, "token"},
		{"release/name bad", func(ctx context.Context, e *lock.Engine) error { return e.Release(ctx, "a b", 5) }, "name"},
		{"revoke/name bad", func(ctx context.Context, e *lock.Engine) error { _, err := e.Revoke(ctx, "", "r"); return err }, "name"},
		{"revoke/reason too long", func(ctx context.Context, e *lock.Engine) error {
			_, err := e.Revoke(ctx, "ok", strings.Repeat("r", lock.MaxReasonLen+1))
			return err
		}, "reason"},
		{"waiters/name bad", func(ctx context.Context, e *lock.Engine) error { _, err := e.Waiters(ctx, "a/b"); return err }, "name"},
	}
}

// badReadsAndWrites are fenced writes, listings and history reads with
// one bad argument each.
func badReadsAndWrites() []badInput {
	return []badInput{
		{"fenced/resource bad", func(ctx context.Context, e *lock.Engine) error {
			_, err := e.PutFenced(ctx, "a/b", 5, json.RawMessage(`1`), "")
			return err
		}, "resource"},
		{"fenced/token zero", func(ctx context.Context, e *lock.Engine) error {
			_, err := e.PutFenced(ctx, "r", 0, json.RawMessage(`1`), "")
			return err
		}, "token"},
		{"fenced/value missing", func(ctx context.Context, e *lock.Engine) error {
			_, err := e.PutFenced(ctx, "r", 5, nil, "")
			return err
		}, "value"},
		{"fenced/value not JSON", func(ctx context.Context, e *lock.Engine) error {
			_, err := e.PutFenced(ctx, "r", 5, json.RawMessage(`{nope`), "")
			return err
		}, "value"},
		{"fenced/lock bad", func(ctx context.Context, e *lock.Engine) error {
			_, err := e.PutFenced(ctx, "r", 5, json.RawMessage(`1`), "a b")
			return err
		}, "lock"},
		{"fenced/get resource bad", func(ctx context.Context, e *lock.Engine) error { _, err := e.GetFenced(ctx, ""); return err }, "resource"},

		{"list/limit negative", func(ctx context.Context, e *lock.Engine) error {
			_, _, err := e.List(ctx, lock.ListOptions{Limit: -1})
			return err
		}, "limit"},
		{"list/limit too large", func(ctx context.Context, e *lock.Engine) error {
			_, _, err := e.List(ctx, lock.ListOptions{Limit: lock.MaxListLimit + 1})
			return err
		}, "limit"},
		{"list/prefix bad", func(ctx context.Context, e *lock.Engine) error {
			_, _, err := e.List(ctx, lock.ListOptions{Prefix: "a/"})
			return err
		}, "prefix"},
		{"list/cursor bad", func(ctx context.Context, e *lock.Engine) error {
			_, _, err := e.List(ctx, lock.ListOptions{After: "x\x00"})
			return err
		}, "cursor"},
		{"history/limit too large", func(ctx context.Context, e *lock.Engine) error {
			_, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Limit: lock.MaxListLimit + 1})
			return err
		}, "limit"},
		{"history/before negative", func(ctx context.Context, e *lock.Engine) error {
			_, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Before: -1})
			return err
		}, "before"},
		{"history/lock bad", func(ctx context.Context, e *lock.Engine) error {
			_, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Lock: "a/b"})
			return err
		}, "lock"},
	}
}
