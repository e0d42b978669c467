package client

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBearer_ReadsTheFileAgainWhenOld: a token read from a file is sent
// until TokenFileMaxAge has passed, then read again; a file gone or empty
// then keeps the last token; a token given as is never changes.
func TestBearer_ReadsTheFileAgainWhenOld(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	put := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put("one\n")
	b, err := newBearer("", file)
	if err != nil {
		t.Fatal(err)
	}
	age := func() { b.mu.Lock(); b.read = b.read.Add(-TokenFileMaxAge); b.mu.Unlock() }
	put("two")
	if got := b.token(); got != "one" {
		t.Errorf("token before TokenFileMaxAge = %q, want one", got)
	}
	age()
	if got := b.token(); got != "two" {
		t.Errorf("token after TokenFileMaxAge = %q, want two", got)
	}
	put(" \n")
	age()
	if got := b.token(); got != "two" {
		t.Errorf("token from an empty file = %q, want the last, two", got)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if b.reload() || b.token() != "two" {
		t.Errorf("a file gone: reload reported a change, or token %q is not the last, two", b.token())
	}
	put("three")
	if !b.reload() || b.token() != "three" {
		t.Errorf("reload after a new token: token %q, want three", b.token())
	}

	given, err := newBearer("as-is", file)
	if err != nil || given.reload() || given.token() != "as-is" {
		t.Errorf("a token given as is: %v, token %q", err, given.token())
	}
}
