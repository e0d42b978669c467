package clientsuite_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
)

// A proxy that redirects with 301, 302 or 303 makes net/http resend a
// DELETE or POST as a GET: a release would have read the lock and
// reported success. Found by FuzzClient_ServerAnswers (it also took any
// 3xx for a success). A redirect that keeps the method is followed.
func TestRedirect_OnlyRedirectsThatKeepTheMethodAreFollowed(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/old/"):
			http.Redirect(w, r, "/new/"+strings.TrimPrefix(r.URL.Path, "/old/"), http.StatusMovedPermanently)
		case strings.HasPrefix(r.URL.Path, "/keep/"):
			http.Redirect(w, r, "/new/"+strings.TrimPrefix(r.URL.Path, "/keep/"), http.StatusPermanentRedirect)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"name":"x","token":7,"ttl":"30s"}`))
		}
	}))
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.NewWithConfig(client.Config{Endpoints: []string{ts.URL + "/old"}, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}

	err = c.Release(ctx, "x", 7)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusMovedPermanently || !strings.Contains(e.Detail, "/new/") {
		t.Fatalf("release behind a 301: %v, want a 301 *client.Error naming the new location", err)
	}
	if errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("a redirect is an answer, not unavailability: %v", err)
	}
	// Reads follow a 301: they stay reads.
	if l, err := c.Get(ctx, "x"); err != nil || l.Token != 7 {
		t.Fatalf("get behind a 301: %+v, %v", l, err)
	}
	mu.Lock()
	got := strings.Join(seen, ", ")
	seen = nil
	mu.Unlock()
	if want := "DELETE /old/v1/locks/x, GET /old/v1/locks/x, GET /new/v1/locks/x"; got != want {
		t.Fatalf("requests: %s; want %s", got, want)
	}

	// 308 keeps the method: the DELETE is resent as a DELETE.
	c2, err := client.NewWithConfig(client.Config{Endpoints: []string{ts.URL + "/keep"}, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Release(ctx, "x", 7); err != nil {
		t.Fatalf("release behind a 308: %v", err)
	}
	mu.Lock()
	got = strings.Join(seen, ", ")
	mu.Unlock()
	if want := "DELETE /keep/v1/locks/x, DELETE /new/v1/locks/x"; got != want {
		t.Fatalf("requests: %s; want %s", got, want)
	}
}
