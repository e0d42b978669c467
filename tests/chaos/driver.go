package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// History collects Ops from many goroutines, with times relative to one
// start on the test process's monotonic clock.
type History struct {
	start time.Time
	mu    sync.Mutex
	ops   []check.Op
}

// NewHistory starts the clock.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is the time since the start, in nanoseconds.
func (h *History) Now() int64 { return time.Since(h.start).Nanoseconds() }

// Add records op and gives it its ID.
func (h *History) Add(op check.Op) check.Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	op.ID = len(h.ops)
	h.ops = append(h.ops, op)
	return op
}

// Ops returns a copy of what was recorded.
func (h *History) Ops() []check.Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]check.Op(nil), h.ops...)
}

// Driver sends one client's requests to one node and records each as an
// Op. It never retries: a retried write could happen twice, and the
// checker must know what was sent.
type Driver struct {
	Client int
	Node   int
	Base   string // the node's URL
	TTL    time.Duration
	H      *History
	HTTP   *http.Client
	// Pool, when set, is the lock set pool every op of d is in (Op.Pool).
	Pool string
	// MinHold, when set, is the at-least window the next lock, permit or
	// rwlock acquires ask for (Op.MinHold).
	MinHold time.Duration
}

// NewHTTPClient is the client drivers use, with the operator's
// credential: its timeout is above baton's own bound on etcd calls (5 s),
// so a node that can reach etcd answers before the client gives up, and
// below the Go client's default (10 s).
func NewHTTPClient() *http.Client { return newHTTPClientAs(operatorToken) }

// newHTTPClientAs is NewHTTPClient with the credential of token.
func newHTTPClientAs(token string) *http.Client {
	return &http.Client{Timeout: 8 * time.Second, Transport: bearer(token, &http.Transport{MaxIdleConnsPerHost: 4})}
}

// bearer is rt sending token as every request's bearer token.
func bearer(token string, rt http.RoundTripper) http.RoundTripper {
	return bearerTransport{token: token, rt: rt}
}

type bearerTransport struct {
	token string
	rt    http.RoundTripper
}

func (b bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// A RoundTripper must not change the request it is given.
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach rt.
func (b bearerTransport) CloseIdleConnections() {
	if c, ok := b.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type problem struct {
	Code  string `json:"code"`
	Token int64  `json:"token"`
	Owner string `json:"owner"`
	Value json.RawMessage
}

// do sends one request and fills op's outcome fields. body is JSON.
func (d *Driver) do(ctx context.Context, op check.Op, method, path string, body any) (check.Op, []byte) {
	op.Client, op.Node = d.Client, d.Node
	if d.Pool != "" {
		op.Pool = d.Pool
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.Base+path, rd)
	if err != nil {
		panic(err) // the driver built a bad URL: a bug in the test
	}
	req.Header.Set("Content-Type", "application/json")
	op.Call = d.H.Now()
	resp, err := d.HTTP.Do(req)
	var b []byte
	if err == nil {
		b, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	op.Return = d.H.Now()
	if err != nil {
		op.Err = err.Error()
		// Refused: nothing listened, so nothing was sent. Anything
		// else (a timeout, a reset) may have reached etcd.
		if errors.Is(err, syscall.ECONNREFUSED) {
			op.Result = check.Failed
		} else {
			op.Result = check.Unknown
		}
		return op, nil
	}
	op.Status = resp.StatusCode
	if resp.StatusCode >= 400 {
		var p problem
		json.Unmarshal(b, &p)
		op.Code = p.Code
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		op.RetryAfter = resp.Header.Get("Retry-After")
	}
	return op, b
}

// classify sets op.Result from its status and code; rejected lists the
// problem codes that are a definite "no" for this kind of op.
func classify(op check.Op, rejected ...string) check.Op {
	switch {
	case op.Result != "":
	case op.Status >= 200 && op.Status < 300:
		op.Result = check.OK
	case op.Status == http.StatusServiceUnavailable:
		// An etcd timeout can come after the txn committed.
		op.Result = check.Unknown
	default:
		for _, c := range rejected {
			if op.Code == c {
				op.Result = check.Rejected
				return op
			}
		}
		// A 500, or a 4xx the workload never provokes: the checker
		// reports it; the op's effect is unknown.
		op.Result = check.Unknown
	}
	return op
}

// Acquire asks for lock without waiting; on OK, op.OutToken is the token.
func (d *Driver) Acquire(ctx context.Context, lock, owner string) check.Op {
	return d.AcquireWaiting(ctx, lock, owner, 0)
}

// AcquireWaiting asks for lock, waiting in its queue for up to wait (0:
// not at all).
func (d *Driver) AcquireWaiting(ctx context.Context, lock, owner string, wait time.Duration) check.Op {
	op, b := d.acquireAt(ctx, check.Op{Kind: check.Acquire, Lock: lock, Owner: owner}, lockPath(lock), map[string]any{}, "owner", wait)
	op = classify(op, "lock_held")
	if op.Result == check.OK {
		var l struct {
			Token int64 `json:"token"`
		}
		if err := json.Unmarshal(b, &l); err != nil || l.Token == 0 {
			op.Result, op.Err = check.Unknown, fmt.Sprintf("acquire answer %q has no token", b)
		}
		op.OutToken = l.Token
	}
	return d.H.Add(op)
}

func lockPath(lock string) string { return "/v1/locks/" + url.PathEscape(lock) }

// Renew extends the hold with token.
func (d *Driver) Renew(ctx context.Context, lock string, token int64) check.Op {
	op, _ := d.renewAt(ctx, check.Op{Kind: check.Renew, Lock: lock, Token: token}, lockPath(lock))
	return d.H.Add(classify(op, "not_held", "token_mismatch"))
}

// Release ends the hold with token.
func (d *Driver) Release(ctx context.Context, lock string, token int64) check.Op {
	return d.endAt(ctx, check.Op{Kind: check.Release, Lock: lock, Token: token}, lockPath(lock), "not_held", "token_mismatch")
}

// Get reads the holder; Rejected means the lock is free.
func (d *Driver) Get(ctx context.Context, lock string) check.Op {
	op, b := d.do(ctx, check.Op{Kind: check.Get, Lock: lock}, http.MethodGet, lockPath(lock), nil)
	op = classify(op, "not_held", "not_found")
	if op.Result == check.OK {
		var l struct {
			Token int64  `json:"token"`
			Owner string `json:"owner"`
		}
		json.Unmarshal(b, &l)
		op.OutToken, op.OutOwner = l.Token, l.Owner
	}
	return d.H.Add(readResult(op))
}

// FPut writes value to the fenced register named like lock, with token.
func (d *Driver) FPut(ctx context.Context, lock string, token int64, value string) check.Op {
	op, _ := d.do(ctx, check.Op{Kind: check.FPut, Lock: lock, Token: token, Value: value}, http.MethodPut,
		"/v1/fenced/"+url.PathEscape(lock), map[string]any{"token": token, "value": value})
	return d.H.Add(classify(op, "stale_token"))
}

// FGet reads the fenced register; Rejected means it was never written.
func (d *Driver) FGet(ctx context.Context, lock string) check.Op {
	return d.H.Add(d.fget(ctx, check.Op{Kind: check.FGet, Lock: lock}))
}

// fget reads the fenced resource op names, without recording it.
func (d *Driver) fget(ctx context.Context, op check.Op) check.Op {
	op, b := d.do(ctx, op, http.MethodGet, "/v1/fenced/"+url.PathEscape(op.Name()), nil)
	op = classify(op, "not_found")
	if op.Result == check.OK {
		var f struct {
			Token int64  `json:"token"`
			Value string `json:"value"`
		}
		json.Unmarshal(b, &f)
		op.OutToken, op.OutValue = f.Token, f.Value
	}
	return readResult(op)
}

// readResult turns a read that got no answer into Failed: a read changes
// nothing, so one without an answer tells the checker nothing either.
func readResult(op check.Op) check.Op {
	if op.Result == check.Unknown && (op.Status == 0 || op.Status == http.StatusServiceUnavailable) {
		op.Result = check.Failed
	}
	return op
}
