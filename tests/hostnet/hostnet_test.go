package hostnet

import (
	"errors"
	"syscall"
	"testing"
)

// TestHold_KeepsAChangeOutUntilReleased: while one browser holds the
// network, and while two do, no change can take the lock; once both let
// go, a change runs.
func TestHold_KeepsAChangeOutUntilReleased(t *testing.T) {
	first, err := Hold()
	if err != nil {
		t.Fatal(err)
	}
	second, err := Hold() // browsers share the lock
	if err != nil {
		t.Fatal(err)
	}
	if release, err := lock(syscall.LOCK_EX | syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		if err == nil {
			release()
		}
		t.Fatalf("a change took the lock under two browsers: %v", err)
	}
	first()
	if release, err := lock(syscall.LOCK_EX | syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		if err == nil {
			release()
		}
		t.Fatalf("a change took the lock under the second browser: %v", err)
	}
	second()
	ran := false
	if err := Change(func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("Change with no browser: ran %v, %v", ran, err)
	}
}
