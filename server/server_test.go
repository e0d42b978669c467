package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/tests/testserver"
	"github.com/baton-dev/baton/trail"
)

func TestHealthzAndReadyz_Answer200WhileEtcdServes(t *testing.T) {
	s := testserver.Start(t)
	for path, status := range map[string]string{"/healthz": "ok", "/readyz": "ready"} {
		t.Run(path, func(t *testing.T) {
			r := s.Do("GET", path, "")
			if body := testserver.WantJSON[map[string]string](t, r, http.StatusOK); body["status"] != status || len(body) != 1 {
				t.Errorf("%s answered %s, want {\"status\":%q}", path, r.Body, status)
			}
		})
	}
}

func TestCluster_ShowsOneMemberThatIsTheLeader(t *testing.T) {
	s := testserver.Start(t)
	r := s.Do("GET", "/v1/cluster", "")
	c := testserver.WantJSON[api.Cluster](t, r, http.StatusOK)
	obj := testserver.RawObject(t, r.Body)
	testserver.WantKeys(t, "cluster", obj, []string{"members", "raft_term", "revision"}, []string{testserver.AnyOther})
	if len(c.Members) != 1 {
		t.Fatalf("members %+v, want one", c.Members)
	}
	var members []map[string]json.RawMessage
	if err := json.Unmarshal(obj["members"], &members); err != nil {
		t.Fatal(err)
	}
	testserver.WantKeys(t, "member", members[0], []string{"name", "peer_urls", "client_urls", "is_leader"}, []string{testserver.AnyOther})
	m := c.Members[0]
	if m.Name != "test" || !m.IsLeader || len(m.PeerURLs) != 1 || len(m.ClientURLs) != 1 || m.ID != c.Leader {
		t.Errorf("member %+v (leader %q), want the test member, leading, with its URLs", m, c.Leader)
	}
	if c.RaftTerm < 1 || c.Revision < 1 {
		t.Errorf("raft_term %d revision %d, want both positive", c.RaftTerm, c.Revision)
	}
	// The revision is the current one: a write moves it on.
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/x", `{"owner":"w"}`), http.StatusCreated)
	if c2 := testserver.WantJSON[api.Cluster](t, s.Do("GET", "/v1/cluster", ""), http.StatusOK); c2.Revision <= c.Revision {
		t.Errorf("revision %d after a write, want above %d", c2.Revision, c.Revision)
	}
}

func TestIndex_ServesTheLandingPage(t *testing.T) {
	s := testserver.Start(t)
	r := s.Do("GET", "/", "")
	testserver.WantStatus(t, r, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(string(r.Body), "baton") {
		t.Fatalf("Content-Type %q body %.80s", ct, r.Body)
	}
}

// metric returns the value of the sample line that starts with series.
func metric(t *testing.T, body, series string) (float64, bool) {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return v, true
		}
	}
	return 0, false
}

func TestMetrics_ExposeRequestsLocksWaitersAndAcquireDuration(t *testing.T) {
	s := testserver.Start(t)
	// Methods are the client's: made-up ones must not become label values.
	for i := range 20 {
		r := s.Do(fmt.Sprintf("MADEUP%d", i), "/v1/locks/m", "")
		if r.Status < 400 || r.Status >= 500 {
			t.Fatalf("method MADEUP%d: status %d, want 4xx", i, r.Status)
		}
	}
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/m", `{"owner":"w1"}`), http.StatusCreated)
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/m", `{"owner":"w2"}`), http.StatusConflict)
	testserver.WantStatus(t, s.Do("GET", "/v1/locks/m", ""), http.StatusOK)
	testserver.WantStatus(t, s.Do("GET", "/v1/nowhere/at-all", ""), http.StatusNotFound)

	// One waiter, queued until the end of the test.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.Send(ctx, "POST", "/v1/locks/m", `{"owner":"w3","wait":"30s"}`)
	}()
	t.Cleanup(func() { cancel(); <-done })
	poll.Until(t, 10*time.Second, "queued", func() bool { return stats(t, s).Waiters == 1 })

	r := s.Do("GET", "/metrics", "")
	testserver.WantStatus(t, r, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want Prometheus text", ct)
	}
	body := string(r.Body)
	for series, want := range map[string]float64{
		`baton_http_requests_total{code="201",method="POST",route="/v1/locks/:name"}`: 1,
		`baton_http_requests_total{code="409",method="POST",route="/v1/locks/:name"}`: 1,
		`baton_http_requests_total{code="200",method="GET",route="/v1/locks/:name"}`:  1,
		`baton_locks_held`:                          1,
		`baton_waiters`:                             1,
		`baton_sessions`:                            0,
		`baton_stats_up`:                            1,
		`baton_limit{name="max_sessions"}`:          float64(lock.DefaultConfig().MaxSessions),
		`baton_limit{name="max_waiters_per_lock"}`:  float64(lock.DefaultConfig().MaxWaitersPerLock),
		`baton_limit{name="max_locks_per_session"}`: float64(lock.DefaultConfig().MaxLocksPerSession),
		`baton_limit{name="max_event_streams"}`:     float64(trail.DefaultConfig().MaxEventStreams),
		`baton_acquire_duration_seconds_count{result="acquired",waited="false"}`: 1,
		`baton_acquire_duration_seconds_count{result="held",waited="false"}`:     1,
	} {
		got, ok := metric(t, body, series)
		if !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if _, ok := metric(t, body, `baton_acquire_duration_seconds_bucket{result="acquired",waited="false",le="+Inf"}`); !ok {
		t.Error("baton_acquire_duration_seconds has no buckets")
	}
	// Unknown paths must not become label values: one label for all.
	if strings.Contains(body, "nowhere") {
		t.Error("an unknown path became a label value")
	}
	if strings.Contains(body, "MADEUP") || !regexp.MustCompile(`baton_http_requests_total\{code="4\d\d",method="other",route="[^"]*"\} 20`).MatchString(body) {
		t.Error("made-up methods are not counted together as method=\"other\"")
	}
	if !regexp.MustCompile(`baton_http_requests_total\{code="404",method="GET",route="[^"]*"\} 1`).MatchString(body) {
		t.Error("the 404 of an unknown route is not counted")
	}
}

func TestEtcdStopped_RequestsAnswer503WithRetryAfterInsteadOfHanging(t *testing.T) {
	s := testserver.Start(t)
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/before", `{"owner":"w"}`), http.StatusCreated)
	s.Member.Close()
	s.Allow5xx.Store(true)

	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/readyz", ""},
		{"GET", "/v1/locks/before", ""},
		{"POST", "/v1/locks/after", `{"owner":"w"}`},
		{"POST", "/v1/locks/after", `{"owner":"w","wait":"30s"}`},
		{"DELETE", "/v1/locks/before?token=5", ""},
		{"GET", "/v1/locks", ""},
		{"POST", "/v1/sessions", `{"owner":"w"}`},
		{"GET", "/v1/history", ""},
		{"PUT", "/v1/fenced/ledger", `{"token":5,"value":1}`},
		{"GET", "/v1/cluster", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := s.Do(tc.method, tc.path, tc.body)
			p := testserver.WantProblem(t, r, http.StatusServiceUnavailable, "unavailable")
			if r.Took > 10*time.Second {
				t.Errorf("answered after %s, want at most 10s", r.Took)
			}
			if h := r.Header.Get("Retry-After"); h == "" || h != fmt.Sprint(p.RetryAfter) {
				t.Errorf("Retry-After %q, retry_after %d: want both, equal", h, p.RetryAfter)
			}
			if strings.Contains(p.Detail, "rpc error") || strings.Contains(p.Detail, "grpc") {
				t.Errorf("detail leaks etcd's error: %q", p.Detail)
			}
		})
	}
	// The process still runs, and metrics still answer.
	testserver.WantStatus(t, s.Do("GET", "/healthz", ""), http.StatusOK)
	r := s.Do("GET", "/metrics", "")
	testserver.WantStatus(t, r, http.StatusOK)
	if up, ok := metric(t, string(r.Body), "baton_stats_up"); !ok || up != 0 {
		t.Errorf("baton_stats_up = %v (present %v), want 0", up, ok)
	}
}

// startPair starts a two-member cluster: losing either member loses the
// quorum, while the other member keeps running.
func startPair(t *testing.T) (a, b *embedetcd.Member) {
	t.Helper()
	ca, cb := testetcd.Config(t), testetcd.Config(t)
	ca.Name, cb.Name = "a", "b"
	ca.InitialCluster = fmt.Sprintf("a=%s,b=%s", ca.PeerURL, cb.PeerURL)
	cb.InitialCluster = ca.InitialCluster
	type started struct {
		m   *embedetcd.Member
		err error
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cha, chb := make(chan started, 1), make(chan started, 1)
	for _, x := range []struct {
		cfg embedetcd.Config
		ch  chan started
	}{{ca, cha}, {cb, chb}} {
		go func() {
			m, err := embedetcd.Start(ctx, x.cfg)
			x.ch <- started{m, err}
		}()
	}
	ra, rb := <-cha, <-chb
	for _, r := range []started{ra, rb} {
		if r.err != nil {
			t.Fatalf("start member: %v", r.err)
		}
		t.Cleanup(r.m.Close)
	}
	return ra.m, rb.m
}

func TestQuorumLost_ReadyzAndRequestsAnswer503WithinTheirTimeouts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a two-member cluster")
	}
	a, b := startPair(t)
	// etcd calls time out after 3s instead of 5s, to keep the test short;
	// /readyz's own 2s timeout still ends its probe first.
	cfg := lock.DefaultConfig()
	cfg.OpTimeout = 3 * time.Second
	s := testserver.StartOn(t, a, cfg)
	testserver.WantStatus(t, s.Do("GET", "/readyz", ""), http.StatusOK)
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/before", `{"owner":"w"}`), http.StatusCreated)

	b.Close()
	s.Allow5xx.Store(true)
	// Member a runs on but cannot reach a quorum: etcd calls hang until
	// baton's own timeouts (readyz 2s, each etcd call 3s) end them.
	t.Run("requests", func(t *testing.T) {
		for _, tc := range []struct{ method, path, body string }{
			{"GET", "/readyz", ""},
			{"GET", "/v1/locks/before", ""},
			{"POST", "/v1/locks/after", `{"owner":"w"}`},
		} {
			t.Run(tc.method+" "+tc.path, func(t *testing.T) {
				t.Parallel()
				r := s.Do(tc.method, tc.path, tc.body)
				p := testserver.WantProblem(t, r, http.StatusServiceUnavailable, "unavailable")
				if r.Took > 10*time.Second {
					t.Errorf("answered after %s, want within the 3s etcd timeout and some slack", r.Took)
				}
				if h := r.Header.Get("Retry-After"); h == "" || h != fmt.Sprint(p.RetryAfter) {
					t.Errorf("Retry-After %q, retry_after %d: want both, equal", h, p.RetryAfter)
				}
			})
		}
	})
	testserver.WantStatus(t, s.Do("GET", "/healthz", ""), http.StatusOK)
}

// leaderSwitch is an embedded member whose leader the test takes away.
type leaderSwitch struct {
	*embedetcd.Member
	has *atomic.Bool
}

func (l leaderSwitch) HasLeader() bool { return l.has.Load() }

// A node whose member knows no leader (cut off from the majority, or in
// an election) answers 503 at once instead of waiting for a proposal that
// cannot commit, writes nothing, and still shows /v1/cluster.
func TestNoLeader_RequestsAnswer503AtOnceAndClusterStillAnswers(t *testing.T) {
	var hasLeader atomic.Bool
	hasLeader.Store(true)
	m := testetcd.Start(t)
	cfg := lock.DefaultConfig()
	cfg.Embedded = leaderSwitch{m, &hasLeader}
	s := testserver.StartOn(t, m, cfg)
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/before", `{"owner":"w"}`), http.StatusCreated)

	// The keys as the leader goes: nothing may be written while there is
	// none (the history index, which waits for a leader too, included).
	keys := s.Keys()
	hasLeader.Store(false)
	s.Allow5xx.Store(true)
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/readyz", ""},
		{"POST", "/v1/locks/after", `{"owner":"w","wait":"30s"}`},
		{"GET", "/v1/locks/before", ""},
		{"POST", "/v1/sessions", `{"owner":"w"}`},
		{"PUT", "/v1/fenced/ledger", `{"token":5,"value":1}`},
		{"GET", "/v1/events", ""},
	} {
		r := s.Do(tc.method, tc.path, tc.body)
		p := testserver.WantProblem(t, r, http.StatusServiceUnavailable, "unavailable")
		if r.Header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "no leader") {
			t.Errorf("%s %s: Retry-After %q, detail %q; want both, naming the missing leader", tc.method, tc.path, r.Header.Get("Retry-After"), p.Detail)
		}
		if r.Took > time.Second {
			t.Errorf("%s %s answered after %s; want at once", tc.method, tc.path, r.Took)
		}
	}
	// A wrong method is still a 405, not hidden behind the leader check.
	testserver.WantProblem(t, s.Do("PATCH", "/v1/locks/before", ""), http.StatusMethodNotAllowed, "method_not_allowed")
	c := testserver.WantJSON[api.Cluster](t, s.Do("GET", "/v1/cluster", ""), http.StatusOK)
	if len(c.Members) != 1 {
		t.Errorf("cluster without a leader: %+v", c)
	}
	hasLeader.Store(true)
	if after := s.Keys(); !maps.Equal(after, keys) {
		t.Errorf("keys changed without a leader:\nbefore %v\nafter  %v", keys, after)
	}
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/after", `{"owner":"w"}`), http.StatusCreated)
}

// stats counts the cluster's locks, waiters and sessions, as the engine
// does for its metrics.
func stats(t *testing.T, s *testserver.Server) lock.Stats {
	t.Helper()
	st, err := s.Eng.Stats(context.Background())
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	return st
}
