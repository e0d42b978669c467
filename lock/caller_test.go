package lock_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

func as(ctx context.Context, cred string, admin bool) context.Context {
	return lock.WithCaller(ctx, lock.Caller{Credential: cred, Admin: admin})
}

// rawValue reads a key as etcd has it, with its ModRevision.
func rawValue(t *testing.T, cli *clientv3.Client, key string) (string, int64) {
	t.Helper()
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "", 0
	}
	return string(resp.Kvs[0].Value), resp.Kvs[0].ModRevision
}

func TestCaller_AnotherCredentialCannotReleaseOrRenewAHoldAndNothingChanges(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	a, b, admin := as(ctx, "cred-aaaaaaaaaaaa", false), as(ctx, "cred-bbbbbbbbbbbb", false), as(ctx, "cred-cccccccccccc", true)

	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w1", TTL: 30 * time.Second})
	if l.Credential != "" {
		t.Fatalf("a hold taken without a caller records credential %q", l.Credential)
	}
	// Without a caller nothing is compared: anyone may release.
	if err := e.Release(b, "job", l.Token); err != nil {
		t.Fatalf("release of a hold without a credential: %v", err)
	}

	l, _, err := e.Acquire(a, lock.AcquireRequest{Name: "job", Owner: "w1", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if l.Credential != "cred-aaaaaaaaaaaa" {
		t.Fatalf("hold credential %q, want A's", l.Credential)
	}
	before, rev := rawValue(t, m.Client(), holdtest.Prefix+"locks/job")
	var rec map[string]any
	if err := json.Unmarshal([]byte(before), &rec); err != nil || rec["credential"] != "cred-aaaaaaaaaaaa" {
		t.Fatalf("holder record %s: want A's credential recorded", before)
	}
	events := len(holdtest.History(t, e, "job"))

	if err := e.Release(b, "job", l.Token); !errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("B releases A's hold with the right token: %v, want ErrNotOwner", err)
	}
	if _, err := e.Renew(b, "job", l.Token); !errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("B renews A's hold with the right token: %v, want ErrNotOwner", err)
	}
	if after, rev2 := rawValue(t, m.Client(), holdtest.Prefix+"locks/job"); after != before || rev2 != rev {
		t.Fatalf("the hold changed after refused calls: %s@%d, was %s@%d", after, rev2, before, rev)
	}
	if n := len(holdtest.History(t, e, "job")); n != events {
		t.Errorf("%d events after refused calls, want %d", n, events)
	}

	// A stale token still answers token_mismatch before any ownership
	// question: the check adds no new way to learn about a hold.
	if err := e.Release(b, "job", l.Token-1); !errors.Is(err, lock.ErrTokenMismatch) {
		t.Errorf("B releases with a stale token: %v, want ErrTokenMismatch", err)
	}
	if _, err := e.Renew(a, "job", l.Token); err != nil {
		t.Errorf("A renews its own hold: %v", err)
	}
	if _, err := e.Renew(admin, "job", l.Token); err != nil {
		t.Errorf("an admin renews A's hold: %v", err)
	}
	if err := e.Release(admin, "job", l.Token); err != nil {
		t.Errorf("an admin releases A's hold: %v", err)
	}
	if !isNotHeld(t, e, "job") {
		t.Error("job still held after the admin's release")
	}

	l, _, err = e.Acquire(a, lock.AcquireRequest{Name: "job", Owner: "w1", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Release(a, "job", l.Token); err != nil {
		t.Errorf("A releases its own hold: %v", err)
	}
}

func TestCaller_SessionsBelongToTheirCreator(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	a, b, admin := as(ctx, "cred-aaaaaaaaaaaa", false), as(ctx, "cred-bbbbbbbbbbbb", false), as(ctx, "cred-cccccccccccc", true)

	s, err := e.CreateSession(a, "w1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if s.Credential != "cred-aaaaaaaaaaaa" {
		t.Fatalf("session credential %q, want A's", s.Credential)
	}
	if got, err := e.GetSession(b, s.ID); err != nil || got.Credential != s.Credential {
		t.Fatalf("B reads A's session: %+v, %v; reading is allowed", got, err)
	}

	// B can neither take a lock in A's session, nor renew or delete it.
	if _, _, err := e.Acquire(b, lock.AcquireRequest{Name: "in-a", Owner: "w2", Session: s.ID}); !errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("B acquires in A's session: %v, want ErrNotOwner", err)
	}
	if _, _, err := e.Acquire(b, lock.AcquireRequest{Name: "in-a", Owner: "w2", Session: s.ID, Wait: time.Second}); !errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("B acquires in A's session, waiting: %v, want ErrNotOwner", err)
	}
	if v, _ := rawValue(t, m.Client(), holdtest.Prefix+"locks/in-a"); v != "" {
		t.Fatalf("B's refused acquire wrote the lock: %s", v)
	}
	if _, err := e.RenewSession(b, s.ID); !errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("B renews A's session: %v, want ErrNotOwner", err)
	}
	l, _, err := e.Acquire(a, lock.AcquireRequest{Name: "in-a", Owner: "w1", Session: s.ID})
	if err != nil {
		t.Fatalf("A acquires in its own session: %v", err)
	}
	if err := e.DeleteSession(b, s.ID); !errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("B deletes A's session: %v, want ErrNotOwner", err)
	}
	if got, err := e.Get(ctx, "in-a"); err != nil || got.Token != l.Token {
		t.Fatalf("after B's refused delete the session's lock is %+v, %v; want it held", got, err)
	}

	// The creator and an admin may.
	if _, err := e.RenewSession(a, s.ID); err != nil {
		t.Errorf("A renews its session: %v", err)
	}
	if _, err := e.RenewSession(admin, s.ID); err != nil {
		t.Errorf("an admin renews A's session: %v", err)
	}
	if _, _, err := e.Acquire(admin, lock.AcquireRequest{Name: "by-admin", Owner: "op", Session: s.ID}); err != nil {
		t.Errorf("an admin acquires in A's session: %v", err)
	}
	if err := e.DeleteSession(admin, s.ID); err != nil {
		t.Errorf("an admin deletes A's session: %v", err)
	}
	if _, err := e.GetSession(ctx, s.ID); !errors.Is(err, lock.ErrSessionNotFound) {
		t.Errorf("after the admin's delete: %v, want ErrSessionNotFound", err)
	}
	// What A's acquires remembered of the session's creator does not
	// outlive the session: an acquire into it, waiting or not, finds it
	// gone and writes nothing.
	for _, wait := range []time.Duration{0, time.Second} {
		if _, _, err := e.Acquire(a, lock.AcquireRequest{Name: "after", Owner: "w1", Session: s.ID, Wait: wait}); !errors.Is(err, lock.ErrSessionNotFound) {
			t.Errorf("A acquires in its deleted session (wait %s): %v, want ErrSessionNotFound", wait, err)
		}
	}
	if v, _ := rawValue(t, m.Client(), holdtest.Prefix+"locks/after"); v != "" {
		t.Fatalf("an acquire into a deleted session wrote the lock: %s", v)
	}

	// A session made without a caller belongs to nobody in particular.
	open, err := e.CreateSession(ctx, "w3", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Acquire(b, lock.AcquireRequest{Name: "in-open", Owner: "w2", Session: open.ID}); err != nil {
		t.Errorf("B acquires in a session made without a caller: %v", err)
	}
	if err := e.DeleteSession(b, open.ID); err != nil {
		t.Errorf("B deletes a session made without a caller: %v", err)
	}
}

// TestCaller_OldRecordsWithoutACredentialStillDecode writes a holder
// record and a session record as baton wrote them before credentials
// existed, and acts on them with a caller.
func TestCaller_OldRecordsWithoutACredentialStillDecode(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	b := as(ctx, "cred-bbbbbbbbbbbb", false)
	cli := m.Client()
	g, err := cli.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(int64(g.ID), 16) // as the engine spells lease IDs
	if _, err := cli.Put(ctx, holdtest.Prefix+"sessions/"+id, `{"owner":"old","ttl":30,"created_at":"2026-01-02T03:04:05.000Z"}`, clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	pr, err := cli.Put(ctx, holdtest.Prefix+"locks/old", `{"owner":"old","hold":"0123456789abcdef","lease":"`+id+`","session":"`+id+`","ttl":0,"acquired_at":"2026-01-02T03:04:05.000Z"}`, clientv3.WithLease(g.ID))
	if err != nil {
		t.Fatal(err)
	}
	l, err := e.Get(ctx, "old")
	if err != nil || l.Credential != "" || l.Token != pr.Header.Revision {
		t.Fatalf("old holder record: %+v, %v", l, err)
	}
	if _, err := e.Renew(b, "old", l.Token); err != nil {
		t.Errorf("renew of an old hold with a caller: %v", err)
	}
	if _, _, err := e.Acquire(b, lock.AcquireRequest{Name: "new-in-old", Owner: "w2", Session: id}); err != nil {
		t.Errorf("acquire into an old session with a caller: %v", err)
	}
	if err := e.Release(b, "old", l.Token); err != nil {
		t.Errorf("release of an old hold with a caller: %v", err)
	}
}
