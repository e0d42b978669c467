package clientsuite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/tests/testserver"
)

const (
	readTok   = "client-read-token-0123456"
	writeTok  = "client-write-token-0123456"
	otherTok  = "client-other-write-token-01"
	wrongTok  = "client-read-token-0123457"
	authLines = "read " + readTok + "\nwrite " + writeTok + "\nwrite " + otherTok + "\n"
)

func clientWith(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.NewWithConfig(client.Config{Endpoints: []string{url}, Token: token, Timeout: 5 * time.Second, RetryBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClient_ReadsItsTokenFileAgainWhenANodeRefusesTheToken: a token
// replaced in its file (a JWT renewed before it expires) is sent from the
// first 401 on; the refused call, which did nothing, is sent again with
// it, though it is an acquire. The same token again is not.
func TestClient_ReadsItsTokenFileAgainWhenANodeRefusesTheToken(t *testing.T) {
	s := testserver.Start(t, testserver.WithAuth(t, authLines))
	ctx := ctxFor(t, time.Minute)
	name := lockName(t, "l")
	file := filepath.Join(t.TempDir(), "token")
	put := func(tok string) {
		t.Helper()
		// As a renewer does: a new file renamed over the old one.
		if err := os.WriteFile(file+".new", []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".new", file); err != nil {
			t.Fatal(err)
		}
	}
	put(wrongTok)
	c, err := client.NewWithConfig(client.Config{Endpoints: []string{s.TS.URL}, TokenFile: file, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryAcquire(ctx, name, client.AcquireOptions{TTL: 30 * time.Second}); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("acquire with a token the node does not know: %v, want ErrUnauthorized", err)
	}
	put(writeTok)
	lk, err := c.TryAcquire(ctx, name, client.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatalf("acquire after the file got a good token: %v", err)
	}
	if err := c.Release(ctx, name, lk.Token()); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// TestClient_AStreamEndedByItsTokensRemovalGoesOnWithTheFilesNewToken: a
// reload that drops the token a stream was opened with ends the stream;
// the client reconnects, is refused, reads its token file again, finds
// the token that replaced the old one there, and goes on without a gap.
func TestClient_AStreamEndedByItsTokensRemovalGoesOnWithTheFilesNewToken(t *testing.T) {
	s := testserver.Start(t, testserver.WithAuth(t, authLines))
	ctx, cancel := context.WithCancel(ctxFor(t, time.Minute))
	defer cancel()
	name := lockName(t, "l")
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(readTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithConfig(client.Config{Endpoints: []string{s.TS.URL}, TokenFile: file, Timeout: 5 * time.Second, RetryBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	evc, errc := c.Events(ctx, client.EventsOptions{Lock: name})
	writer := clientWith(t, s.TS.URL, writeTok)
	hold := func() {
		t.Helper()
		lk, err := writer.TryAcquire(ctx, name, client.AcquireOptions{TTL: 30 * time.Second})
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		if err := lk.Release(ctx); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	hold()
	for _, typ := range []string{"acquired", "released"} {
		if ev := nextEvent(t, evc, errc); ev.Type != typ {
			t.Fatalf("got %+v, want %s", ev, typ)
		}
	}

	// The read token is replaced: in the file first, then on the node.
	if err := os.WriteFile(file+".new", []byte(otherTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		t.Fatal(err)
	}
	creds, err := auth.Parse(strings.NewReader("write " + writeTok + "\nwrite " + otherTok + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.Auth.Swap(creds)
	hold()
	for _, typ := range []string{"acquired", "released"} {
		if ev := nextEvent(t, evc, errc); ev.Type != typ {
			t.Fatalf("after the token's removal: got %+v, want %s", ev, typ)
		}
	}
}

func TestClient_AuthRefusalsAreTypedErrors(t *testing.T) {
	s := testserver.Start(t, testserver.WithAuth(t, authLines))
	ctx := ctxFor(t, time.Minute)
	name := lockName(t, "l")

	for _, tok := range []string{"", wrongTok} {
		_, _, err := clientWith(t, s.TS.URL, tok).Locks(ctx, client.ListOptions{})
		if !errors.Is(err, client.ErrUnauthorized) || errors.Is(err, client.ErrForbidden) {
			t.Errorf("list with token %q: %v, want ErrUnauthorized only", tok, err)
		}
		var e *client.Error
		if !errors.As(err, &e) || e.Status != 401 || e.Code != "unauthorized" {
			t.Errorf("list with token %q: %#v, want a 401 unauthorized *Error", tok, e)
		}
	}
	if _, _, err := clientWith(t, s.TS.URL, readTok).Locks(ctx, client.ListOptions{}); err != nil {
		t.Errorf("list as a reader: %v", err)
	}
	_, err := clientWith(t, s.TS.URL, readTok).TryAcquire(ctx, name, client.AcquireOptions{})
	var e *client.Error
	if !errors.Is(err, client.ErrForbidden) || !errors.As(err, &e) || !strings.Contains(e.Detail, "write role") {
		t.Errorf("acquire as a reader: %v, want ErrForbidden naming the write role", err)
	}

	lk, err := clientWith(t, s.TS.URL, writeTok).TryAcquire(ctx, name, client.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatalf("acquire as a writer: %v", err)
	}
	other := clientWith(t, s.TS.URL, otherTok)
	if err := other.Release(ctx, name, lk.Token()); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("another writer releases with the right token: %v, want ErrForbidden", err)
	}
	if _, err := other.Renew(ctx, name, lk.Token()); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("another writer renews with the right token: %v, want ErrForbidden", err)
	}
	if err := lk.Release(ctx); err != nil {
		t.Errorf("the acquirer releases: %v", err)
	}
}

// TestEvents_AWrongTokenEndsTheStreamWithErrUnauthorized: a refusal is
// not a node's trouble, so the stream does not retry it forever.
func TestEvents_AWrongTokenEndsTheStreamWithErrUnauthorized(t *testing.T) {
	s := testserver.Start(t, testserver.WithAuth(t, authLines))
	ctx := ctxFor(t, time.Minute)
	for _, o := range []client.EventsOptions{{}, {Since: 1}} { // without and with a revision to start from
		evc, errc := clientWith(t, s.TS.URL, wrongTok).Events(ctx, o)
		for range evc {
			t.Error("an event on a refused stream")
		}
		if err := <-errc; !errors.Is(err, client.ErrUnauthorized) {
			t.Errorf("Since %d: stream ended with %v, want ErrUnauthorized", o.Since, err)
		}
	}
}

// TestClient_AScopedCredentialsRefusalNamesItsPrefixes: a token scoped to
// prefixes gets ErrForbidden outside them, with the role needed and its
// prefixes; its lists hold only its names.
func TestClient_AScopedCredentialsRefusalNamesItsPrefixes(t *testing.T) {
	const scopedTok = "client-scoped-token-0123456"
	s := testserver.Start(t, testserver.WithAuth(t, authLines+"write "+scopedTok+" team-a. shared.\n"))
	ctx := ctxFor(t, time.Minute)
	scoped := clientWith(t, s.TS.URL, scopedTok)
	_, err := scoped.TryAcquire(ctx, "team-b.nightly", client.AcquireOptions{})
	var e *client.Error
	if !errors.Is(err, client.ErrForbidden) || !errors.As(err, &e) || e.Role != "write" || strings.Join(e.Prefixes, " ") != "shared. team-a." {
		t.Fatalf("acquire outside the prefixes: %v (%#v), want ErrForbidden with role write and both prefixes", err, e)
	}
	for _, name := range []string{"team-a.nightly", "team-b.nightly"} {
		if _, err := clientWith(t, s.TS.URL, writeTok).TryAcquire(ctx, name, client.AcquireOptions{TTL: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	locks, _, err := scoped.Locks(ctx, client.ListOptions{})
	if err != nil || len(locks) != 1 || locks[0].Name != "team-a.nightly" {
		t.Errorf("the scoped list: %v, %v; want team-a.nightly alone", locks, err)
	}
}

// TestWhoami_SaysWhoTheTokenSpeaksForAndWhatItMayDo: a scoped credential
// of a policy file reads its name, rules and quotas with their usage; a
// node without authentication says so.
func TestWhoami_SaysWhoTheTokenSpeaksForAndWhatItMayDo(t *testing.T) {
	const tok = "client-payments-token-0123456"
	s := testserver.Start(t, testserver.WithPolicy(t, `
credentials:
  - name: payments
    tokens: ["`+tok+`"]
    rules: {"payments.": write, "shared.": read}
    quotas: {holds: 10, rate: 100}
`))
	ctx := ctxFor(t, time.Minute)
	c := clientWith(t, s.TS.URL, tok)
	if _, err := c.TryAcquire(ctx, "payments.ledger", client.AcquireOptions{TTL: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	w, err := c.Whoami(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []client.Rule{{Prefix: "payments.", Role: "write"}, {Prefix: "shared.", Role: "read"}}
	if !w.Authentication || w.Credential != "payments" || !slices.Equal(w.Rules, want) {
		t.Errorf("whoami %+v, want payments with rules %v", w, want)
	}
	if w.Quotas == nil || *w.Quotas != (client.Quotas{Holds: 10, Rate: 100}) {
		t.Errorf("quotas %+v", w.Quotas)
	}
	if u := w.Usage; u == nil || u.Holds == nil || *u.Holds != 1 || u.Sessions != nil || u.Waiters != nil {
		t.Errorf("usage %+v, want one hold and nothing else", u)
	}
	if _, err := clientWith(t, s.TS.URL, wrongTok).Whoami(ctx); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("whoami with a wrong token: %v, want ErrUnauthorized", err)
	}

	_, open, ctx := setup(t)
	w, err = open.Whoami(ctx)
	if err != nil || w.Authentication || w.Credential != "" || !slices.Equal(w.Rules, []client.Rule{{Prefix: "", Role: "admin"}}) || w.Quotas != nil || w.Usage != nil {
		t.Errorf("whoami without authentication: %+v, %v", w, err)
	}
}
