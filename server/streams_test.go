package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/server"
	"github.com/baton-dev/baton/tests/testserver"
)

// openSSE opens GET /v1/events and returns its answer; the stream stays
// open until ctx ends. Its lines arrive on the channel, if it is 200;
// any other answer's body is the caller's to read (it is closed when the
// test ends).
func openSSE(t *testing.T, ctx context.Context, s *testserver.Server, token string) (*http.Response, <-chan string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.TS.URL+"/v1/events", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.TS.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	if resp.StatusCode != http.StatusOK {
		close(lines)
		t.Cleanup(func() { resp.Body.Close() })
		return resp, lines
	}
	go func() {
		defer close(lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody reads: drop, as the test only counts streams
			}
		}
	}()
	return resp, lines
}

func TestStreams_OneAddressCannotTakeEverySlot(t *testing.T) {
	s := testserver.Start(t, testserver.WithServer(func(c *server.Config) {
		c.StreamLimits = server.StreamLimits{PerAddress: 2}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 2; i++ {
		if resp, _ := openSSE(t, ctx, s, ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %d, want 200", i+1, resp.StatusCode)
		}
	}
	third, _ := openSSE(t, ctx, s, "")
	checkStreamRefused(t, third, 2)
	cancel()
	// The slots come back as the streams end.
	poll.Until(t, 10*time.Second, "a stream slot back after the streams closed", func() bool {
		ctx2, cancel2 := context.WithCancel(context.Background())
		defer cancel2()
		resp, _ := openSSE(t, ctx2, s, "")
		return resp.StatusCode == http.StatusOK
	})
}

func TestStreams_OneCredentialCannotTakeEverySlot(t *testing.T) {
	s := testserver.Start(t, testserver.WithAuth(t, "read tok-a-0123456789abcdef\nread tok-b-0123456789abcdef\n"), testserver.WithServer(func(c *server.Config) {
		c.StreamLimits = server.StreamLimits{PerCredential: 1}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if resp, _ := openSSE(t, ctx, s, "tok-a-0123456789abcdef"); resp.StatusCode != http.StatusOK {
		t.Fatalf("first stream of tok-a: %d", resp.StatusCode)
	}
	second, _ := openSSE(t, ctx, s, "tok-a-0123456789abcdef")
	checkStreamRefused(t, second, 1)
	if resp, _ := openSSE(t, ctx, s, "tok-b-0123456789abcdef"); resp.StatusCode != http.StatusOK {
		t.Fatalf("another credential's stream: %d, want 200", resp.StatusCode)
	}
}

func checkStreamRefused(t *testing.T, resp *http.Response, limit int) {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("stream over the cap: %d (Retry-After %q), want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	var p struct {
		Code  string
		Limit int
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if p.Code != "too_many_streams" || p.Limit != limit {
		t.Fatalf("stream over the cap: code %q limit %d, want too_many_streams and %d", p.Code, p.Limit, limit)
	}
}

// TestStreams_AThousandClientsDroppingTogetherLeaveTheNodeHearing: the
// streams are counted out (baton_event_streams back to 0), and afterwards
// a new stream delivers and a waiter is woken by the release that grants
// it the lock.
func TestStreams_AThousandClientsDroppingTogetherLeaveTheNodeHearing(t *testing.T) {
	if testing.Short() {
		t.Skip("a thousand streams")
	}
	s := testserver.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", s.TS.URL+"/v1/events", nil)
			resp, err := s.TS.Client().Do(req)
			if err != nil {
				// The server counts a stream before its answer reaches the
				// client: the drop may come first.
				if ctx.Err() == nil {
					t.Errorf("open stream: %v", err)
				}
				return
			}
			if resp.StatusCode != http.StatusOK {
				t.Errorf("open stream: %d", resp.StatusCode)
			}
			// Read until the client drops it.
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	poll.Until(t, 30*time.Second, "1000 streams open", func() bool { return s.Trail.EventStreams() >= 1000 || t.Failed() })
	if t.Failed() {
		t.FailNow()
	}
	// Something on the way to every stream as they drop.
	lk := s.Do("POST", "/v1/locks/busy", `{"owner":"w"}`)
	var l struct{ Token int64 }
	if err := json.Unmarshal(lk.Body, &l); err != nil {
		t.Fatal(err)
	}
	cancel()
	wg.Wait()
	poll.Until(t, 30*time.Second, "baton_event_streams back to 0 after every client left", func() bool { return s.Trail.EventStreams() == 0 })
	body := string(s.Do("GET", "/metrics", "").Body)
	if !strings.Contains(body, "\nbaton_event_streams 0\n") {
		t.Fatalf("baton_event_streams is not 0 after every stream ended")
	}
	checkStreamsStillHeard(t, s)
}

// checkStreamsStillHeard opens a stream, which must hear the next events,
// and queues a waiter, which the release must wake at once.
func checkStreamsStillHeard(t *testing.T, s *testserver.Server) {
	// A stream opened now hears the next events.
	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	resp, lines := openSSE(t, sctx, s, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream after the burst: %d", resp.StatusCode)
	}
	held := s.Do("POST", "/v1/locks/after", `{"owner":"first"}`)
	if held.Status != http.StatusCreated {
		t.Fatalf("acquire: %d %s", held.Status, held.Body)
	}
	var h struct{ Token int64 }
	_ = json.Unmarshal(held.Body, &h)
	got := make(chan time.Time, 1)
	go func() {
		r, err := s.Send(context.Background(), "POST", "/v1/locks/after", `{"owner":"second","wait":"20s"}`)
		if err != nil || r.Status != http.StatusCreated {
			t.Errorf("waiter: %v %+v", err, r)
		}
		got <- time.Now()
	}()
	poll.Until(t, 10*time.Second, "the waiter queued", func() bool {
		w, err := s.Eng.Waiters(context.Background(), "after")
		return err == nil && len(w) == 1
	})
	if r := s.Do("DELETE", "/v1/locks/after?token="+strconv.FormatInt(h.Token, 10), ""); r.Status != http.StatusNoContent {
		t.Fatalf("release: %d %s", r.Status, r.Body)
	}
	released := time.Now()
	if d := (<-got).Sub(released); d > 100*time.Millisecond {
		t.Errorf("the waiter was served %s after the release, want within 100ms", d)
	}
	timeout := time.After(10 * time.Second)
	for seen := 0; seen < 3; {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			if strings.HasPrefix(line, "event: ") {
				seen++
			}
		case <-timeout:
			t.Fatalf("the stream delivered %d of 3 events (acquired, released, acquired)", seen)
		}
	}
}
