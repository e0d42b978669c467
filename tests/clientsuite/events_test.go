package clientsuite_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
)

// nextEvent returns the next event, failing the test if the stream ends
// or stays silent.
func nextEvent(t *testing.T, evc <-chan client.Event, errc <-chan error) client.Event {
	t.Helper()
	tm := time.NewTimer(15 * time.Second)
	defer tm.Stop()
	select {
	case ev, ok := <-evc:
		if !ok {
			t.Fatalf("stream ended: %v", <-errc)
		}
		return ev
	case <-tm.C:
		t.Fatal("no event within 15s")
		return client.Event{}
	}
}

func TestEvents_ResumeWithoutGapOrDuplicateAfterTheConnectionDrops(t *testing.T) {
	f, c, ctx := setup(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	name := lockName(t, "l")

	evc, errc := c.Events(ctx, client.EventsOptions{Lock: name})
	// Everything recorded once Events has returned is delivered, even
	// before the stream has connected.
	hold := func(owner string) int64 {
		t.Helper()
		lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: owner})
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		if err := lk.Release(ctx); err != nil {
			t.Fatalf("release: %v", err)
		}
		return lk.Token()
	}
	expect := func(owners ...string) {
		t.Helper()
		for _, o := range owners {
			for _, typ := range []string{"acquired", "released"} {
				ev := nextEvent(t, evc, errc)
				if ev.Type != typ || ev.Owner != o || ev.Lock != name || ev.Revision <= 0 || ev.Token <= 0 || ev.Time.IsZero() {
					t.Fatalf("got %+v, want %s by %s", ev, typ, o)
				}
			}
		}
	}

	hold("w1")
	expect("w1")
	// Cut the stream; these holds happen while the client is away or
	// coming back.
	f.CloseClientConnections()
	hold("w2")
	hold("w3")
	expect("w2", "w3")
	// A duplicate of anything before would show up ahead of w4's events.
	hold("w4")
	expect("w4")

	reqs := f.matching(http.MethodGet, "/v1/events")
	if len(reqs) < 2 {
		t.Fatalf("%d stream requests: the stream did not reconnect", len(reqs))
	}
	if reqs[len(reqs)-1].Header.Get("Last-Event-ID") == "" {
		t.Errorf("the reconnection sent no Last-Event-ID")
	}
	// The stream ends when the context does, and says so.
	cancel()
	for range evc {
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("ended with %v, want context.Canceled", err)
	}
}

// sse writes one event as the server does.
func sse(w http.ResponseWriter, rev int64, typ, lock string) {
	fmt.Fprintf(w, "id: %d\nevent: %s\ndata: {\"revision\":%d,\"time\":\"2026-11-29T14:25:13.886Z\",\"type\":%q,\"lock\":%q,\"owner\":\"o\",\"token\":%d}\n\n",
		rev, typ, rev, typ, lock, rev)
}

// TestEvents_ResumeInTheMiddleOfARevision cuts a stream between two events
// of one revision (one transaction that released two locks, say): the
// client must ask for that revision again and skip what it delivered.
func TestEvents_ResumeInTheMiddleOfARevision(t *testing.T) {
	lastIDs := make(chan string, 10)
	node := newFake(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		lastIDs <- r.Header.Get("Last-Event-ID")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "retry: 2000\n\n: heartbeat\n\n")
		switch n {
		case 1:
			sse(w, 5, "released", "a")
			sse(w, 5, "released", "b")
			sse(w, 7, "released", "a") // and the connection ends before 7's "b"
			return
		case 2:
			sse(w, 7, "released", "a")
			sse(w, 7, "released", "b")
			sse(w, 8, "acquired", "a")
		}
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newClient(t, node.URL)
	evc, errc := c.Events(ctx, client.EventsOptions{Since: 4})

	var got []string
	for range 5 {
		ev := nextEvent(t, evc, errc)
		got = append(got, fmt.Sprintf("%d%s", ev.Revision, ev.Lock))
	}
	if fmt.Sprint(got) != "[5a 5b 7a 7b 8a]" {
		t.Errorf("delivered %v, want [5a 5b 7a 7b 8a]", got)
	}
	if first, second := <-lastIDs, <-lastIDs; first != "4" || second != "6" {
		t.Errorf("Last-Event-ID %q then %q, want 4 (Since) then 6 (revision 7 again)", first, second)
	}
	cancel()
	for range evc {
	}
	<-errc
}

func TestEvents_ReconnectsWhenTheStreamFallsSilent(t *testing.T) {
	node := newFake(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if n == 2 {
			sse(w, 9, "acquired", "a")
		}
		// Then nothing, not even heartbeats: a dead peer looks like this.
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newClient(t, node.URL)
	evc, errc := c.Events(ctx, client.EventsOptions{Since: 1, IdleTimeout: 300 * time.Millisecond})
	if ev := nextEvent(t, evc, errc); ev.Revision != 9 {
		t.Errorf("got %+v, want revision 9 from the second connection", ev)
	}
	cancel()
	for range evc {
	}
	<-errc
}

func TestEvents_EndWhenTheServerRefusesTheRequest(t *testing.T) {
	_, c, ctx := setup(t)
	evc, errc := c.Events(ctx, client.EventsOptions{Lock: "not a lock name"})
	for range evc {
		t.Error("an event from an invalid stream")
	}
	var e *client.Error
	if err := <-errc; !errors.Is(err, client.ErrInvalid) || !errors.As(err, &e) || e.Field != "lock" {
		t.Errorf("ended with %v, want ErrInvalid on lock", err)
	}
}
