package lock_test

import (
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// credentialsOf maps each event of name's history to its type and
// credential, oldest first.
func credentialsOf(t *testing.T, e *lock.Engine, name string) [][2]string {
	t.Helper()
	evs := holdtest.History(t, e, name)
	out := make([][2]string, len(evs))
	for i, ev := range evs {
		out[len(evs)-1-i] = [2]string{string(ev.Type), ev.Credential}
	}
	return out
}

func wantCredentials(t *testing.T, e *lock.Engine, name string, want ...[2]string) {
	t.Helper()
	got := credentialsOf(t, e, name)
	if len(got) != len(want) {
		t.Fatalf("%s: events %v, want %v", name, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: events %v, want %v", name, got, want)
		}
	}
}

// TestEvents_RecordTheCredentialOfEachRequestNotTheOwnerItClaims: owner
// is a label any writer may choose; each event also carries the
// credential authentication proved, so the trail tells who acted: the
// Acquirer (also on a handover), the releaser or revoker, and for an
// expiry, which no request causes, the hold's Acquirer.
func TestEvents_RecordTheCredentialOfEachRequestNotTheOwnerItClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	const credA, credB, credAdmin = "cred-aaaaaaaaaaaa", "cred-bbbbbbbbbbbb", "cred-cccccccccccc"
	a, b, admin := as(ctx, credA, false), as(ctx, credB, false), as(ctx, credAdmin, true)

	// B claims A's owner label and queues; A's release hands B the lock;
	// an admin revokes it.
	first, _, err := e.Acquire(a, lock.AcquireRequest{Name: "job", Owner: "payments", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	next := acquireAsync(b, e, lock.AcquireRequest{Name: "job", Owner: "payments", TTL: 30 * time.Second, Wait: 30 * time.Second})
	queued(t, e, "job", 1)
	if err := e.Release(a, "job", first.Token); err != nil {
		t.Fatal(err)
	}
	if got := <-next; got.err != nil {
		t.Fatalf("waiter: %v", got.err)
	}
	if _, err := e.Revoke(admin, "job", "stuck"); err != nil {
		t.Fatal(err)
	}
	wantCredentials(t, e, "job",
		[2]string{"acquired", credA}, [2]string{"released", credA},
		[2]string{"acquired", credB}, [2]string{"revoked", credAdmin})

	// Locks of a session that its creator deletes; a session lock that
	// expires with its session; a lock of its own lease that expires.
	s, err := e.CreateSession(b, "batch", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Acquire(b, lock.AcquireRequest{Name: "in-session", Owner: "batch", Session: s.ID}); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteSession(admin, s.ID); err != nil {
		t.Fatal(err)
	}
	wantCredentials(t, e, "in-session", [2]string{"acquired", credB}, [2]string{"released", credAdmin})

	short, err := e.CreateSession(a, "short", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Acquire(a, lock.AcquireRequest{Name: "lapses", Owner: "short", Session: short.ID}); err != nil {
		t.Fatal(err)
	}
	own, _, err := e.Acquire(b, lock.AcquireRequest{Name: "expires", Owner: "b", TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	expiredOnce(t, []*lock.Engine{e}, map[string]int64{"expires": own.Token})
	poll.Until(t, 30*time.Second, "the session's lock to be recorded as session_expired", func() bool {
		return len(holdtest.EventsOf(holdtest.History(t, e, "lapses"), lock.EventSessionExpired)) == 1
	})
	wantCredentials(t, e, "expires", [2]string{"acquired", credB}, [2]string{"expired", credB})
	wantCredentials(t, e, "lapses", [2]string{"acquired", credA}, [2]string{"session_expired", credA})

	// Without a caller (auth off) no event names a credential.
	anon := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "anon", Owner: "w1"})
	if err := e.Release(ctx, "anon", anon.Token); err != nil {
		t.Fatal(err)
	}
	wantCredentials(t, e, "anon", [2]string{"acquired", ""}, [2]string{"released", ""})
}
