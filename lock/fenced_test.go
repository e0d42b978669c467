package lock_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

func sameJSON(t *testing.T, got, want json.RawMessage) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("stored value %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal(want, &b); err != nil {
		t.Fatalf("want %q is not JSON: %v", want, err)
	}
	return reflect.DeepEqual(a, b)
}

func TestFenced_EqualTokenAcceptedLowerRejected(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	old := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w1"})
	if err := e.Release(ctx, "job", old.Token); err != nil {
		t.Fatal(err)
	}
	cur := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w2"})

	if _, err := e.GetFenced(ctx, "res"); !errors.Is(err, lock.ErrNotFound) {
		t.Fatalf("get of an unwritten resource: %v, want ErrNotFound", err)
	}
	v1 := json.RawMessage(`{"n": 1, "s": ["a", "b"]}`)
	fv, err := e.PutFenced(ctx, "res", cur.Token, v1, "")
	if err != nil {
		t.Fatalf("first write: %v", err)
	}
	if fv.Token != cur.Token || fv.Resource != "res" || fv.Revision <= cur.Token {
		t.Fatalf("first write returned %+v", fv)
	}
	// The same holder writes again with the same token.
	v2 := json.RawMessage(`{"n": 2}`)
	fv2, err := e.PutFenced(ctx, "res", cur.Token, v2, "")
	if err != nil {
		t.Fatalf("write with an equal token: %v", err)
	}
	if fv2.Revision <= fv.Revision {
		t.Fatalf("second write revision %d not after first %d", fv2.Revision, fv.Revision)
	}
	// A stale holder, paused while the lock moved on, writes late.
	_, err = e.PutFenced(ctx, "res", old.Token, json.RawMessage(`{"n": "stale"}`), "")
	var se *lock.StaleTokenError
	if !errors.Is(err, lock.ErrStaleToken) || !errors.As(err, &se) {
		t.Fatalf("write with a lower token: %v, want *StaleTokenError", err)
	}
	if se.Token != old.Token || se.MaxToken != cur.Token {
		t.Fatalf("StaleTokenError = %+v, want Token %d MaxToken %d", se, old.Token, cur.Token)
	}
	got, err := e.GetFenced(ctx, "res")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Token != cur.Token || got.Revision != fv2.Revision || !sameJSON(t, got.Value, v2) {
		t.Fatalf("get = %+v %s, want the second write", got, got.Value)
	}
	// Resources are independent: the old token may still write elsewhere.
	if _, err := e.PutFenced(ctx, "other-res", old.Token, json.RawMessage(`1`), ""); err != nil {
		t.Fatalf("write to another resource: %v", err)
	}
	// A higher token raises the maximum for everyone below it.
	newer := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "other-job", Owner: "w3"})
	if _, err := e.PutFenced(ctx, "res", newer.Token, json.RawMessage(`3`), ""); err != nil {
		t.Fatalf("write with a higher token: %v", err)
	}
	if _, err := e.PutFenced(ctx, "res", cur.Token, json.RawMessage(`4`), ""); !errors.As(err, &se) || se.MaxToken != newer.Token {
		t.Fatalf("write below the raised maximum: %v, want MaxToken %d", err, newer.Token)
	}
}

// Token comparisons must be numeric, not textual: 9 < 10 although "9" > "10".
func TestFenced_TokensCompareNumerically(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	// Tokens up to the current revision have been issued (see
	// TestFenced_TokenNeverIssuedIsRefused): make it reach 100.
	for i := range 100 {
		if _, err := e.Client().Put(ctx, fmt.Sprintf("/bump/%d", i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.PutFenced(ctx, "num", 10, json.RawMessage(`10`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PutFenced(ctx, "num", 9, json.RawMessage(`9`), ""); !errors.Is(err, lock.ErrStaleToken) {
		t.Fatalf("token 9 after 10: %v, want ErrStaleToken", err)
	}
	if _, err := e.PutFenced(ctx, "num", 100, json.RawMessage(`100`), ""); err != nil {
		t.Fatalf("token 100 after 10: %v", err)
	}
	got, err := e.GetFenced(ctx, "num")
	if err != nil || got.Token != 100 {
		t.Fatalf("get = %+v, %v; want token 100", got, err)
	}
}

func TestFenced_WithLockRequiresTheHoldingToken(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	old := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w1"})

	if _, err := e.PutFenced(ctx, "res", old.Token, json.RawMessage(`"w1"`), "job"); err != nil {
		t.Fatalf("holder's write: %v", err)
	}
	if err := e.Release(ctx, "job", old.Token); err != nil {
		t.Fatal(err)
	}
	// Nobody holds the lock: even a token not below the maximum is refused.
	if _, err := e.PutFenced(ctx, "res", old.Token, json.RawMessage(`"late"`), "job"); !errors.Is(err, lock.ErrNotHolder) {
		t.Fatalf("write after release: %v, want ErrNotHolder", err)
	}
	cur := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w2"})
	// One more revision, so that cur.Token+1 has been issued.
	if _, err := e.Client().Put(ctx, "/bump", "x"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		token int64
		lock  string
	}{
		{"stale token", old.Token, "job"},
		{"token above the holder's", cur.Token + 1, "job"},
		{"holder's token for another lock", cur.Token, "unheld"},
	}
	for _, tc := range cases {
		if _, err := e.PutFenced(ctx, "res", tc.token, json.RawMessage(`"x"`), tc.lock); !errors.Is(err, lock.ErrNotHolder) {
			t.Errorf("%s: %v, want ErrNotHolder", tc.name, err)
		}
	}
	got, err := e.GetFenced(ctx, "res")
	if err != nil || got.Token != old.Token || string(got.Value) != `"w1"` {
		t.Fatalf("refused writes changed the value: %+v, %v", got, err)
	}
	if _, err := e.PutFenced(ctx, "res", cur.Token, json.RawMessage(`"w2"`), "job"); err != nil {
		t.Fatalf("new holder's write: %v", err)
	}
	// Holding the named lock does not excuse a token below the maximum:
	// a holder of another lock with a newer token wrote in between.
	newer := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "other-job", Owner: "w3"})
	if _, err := e.PutFenced(ctx, "res", newer.Token, json.RawMessage(`"w3"`), "other-job"); err != nil {
		t.Fatalf("newer holder's write: %v", err)
	}
	var se *lock.StaleTokenError
	if _, err := e.PutFenced(ctx, "res", cur.Token, json.RawMessage(`"w2 again"`), "job"); !errors.As(err, &se) || se.MaxToken != newer.Token {
		t.Fatalf("holder's write below the maximum: %v, want *StaleTokenError with MaxToken %d", err, newer.Token)
	}
	// A fenced write with a lock set does not create a register for a
	// resource nobody wrote before when refused.
	if _, err := e.PutFenced(ctx, "fresh", old.Token, json.RawMessage(`1`), "job"); !errors.Is(err, lock.ErrNotHolder) {
		t.Fatalf("first write with a stale token: %v, want ErrNotHolder", err)
	}
	if _, err := e.GetFenced(ctx, "fresh"); !errors.Is(err, lock.ErrNotFound) {
		t.Fatalf("refused first write left a value: %v", err)
	}
}
