package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
)

func TestCLI_DelayClearAndFencedReset(t *testing.T) {
	eng, addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, _, err := eng.Acquire(ctx, lock.AcquireRequest{Name: "stuck", Owner: "w", LockDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Revoke(ctx, "stuck", "test"); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(t, addr, "status", "stuck"); code != 4 || !strings.Contains(errs, "lock-delay") {
		t.Fatalf("status of a delayed lock: code %d, stderr %q; want 4 saying lock-delay", code, errs)
	}
	if out, errs, code := run(t, addr, "delay", "clear", "stuck", "--reason", "by mistake"); code != 0 || !strings.Contains(out, "lifted") {
		t.Fatalf("delay clear: code %d, %q %q", code, out, errs)
	}
	if _, errs, code := run(t, addr, "delay", "clear", "stuck"); code != 4 || !strings.Contains(errs, "not_delayed") {
		t.Fatalf("delay clear of a lock under no delay: code %d, stderr %q; want 4 naming not_delayed", code, errs)
	}
	if _, err := eng.PutFenced(ctx, "reg", l.Token, json.RawMessage(`1`), ""); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := run(t, addr, "fenced", "reset", "reg", "--reason", "typo"); code != 0 || !strings.Contains(out, "reset") {
		t.Fatalf("fenced reset: code %d, %q %q", code, out, errs)
	}
	if _, err := eng.GetFenced(ctx, "reg"); err == nil {
		t.Fatal("the register still holds a value after the reset")
	}
	if _, _, code := run(t, addr, "fenced", "reset", "reg"); code != 4 {
		t.Fatalf("fenced reset of an empty register: code %d, want 4", code)
	}
}
