package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// The stream-bound sessions' requests: a session created with
// "bind":"stream", its stream held open (GET /v1/sessions/{id}/stream)
// until the client cancels it or it breaks, and locks acquired in it.

// CreateStreamSession makes a session bound to a stream with grace; on
// OK, op.Session is its ID.
func (d *Driver) CreateStreamSession(ctx context.Context, owner string, grace time.Duration) check.Op {
	op, b := d.do(ctx, check.Op{Kind: check.StreamSession, Owner: owner, Grace: grace.String()}, http.MethodPost, "/v1/sessions",
		map[string]any{"owner": owner, "bind": "stream", "grace": grace.String()})
	op = classify(op)
	if op.Result == check.OK {
		var s struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &s); err != nil || s.ID == "" {
			op.Result, op.Err = check.Unknown, fmt.Sprintf("session answer %q has no id", b)
		}
		op.Session = s.ID
	}
	return d.H.Add(op)
}

// AcquireInSession takes lock in the session id, without waiting.
func (d *Driver) AcquireInSession(ctx context.Context, lock, owner, id string) check.Op {
	op, b := d.do(ctx, check.Op{Kind: check.StreamAcquire, Lock: lock, Owner: owner, Session: id}, http.MethodPost, lockPath(lock),
		map[string]any{"owner": owner, "session": id})
	op = classify(op, "lock_held", "session_not_found")
	if op.Result == check.OK {
		var l struct {
			Token int64 `json:"token"`
		}
		json.Unmarshal(b, &l)
		op.OutToken = l.Token
	}
	return d.H.Add(op)
}

// Stream is an open stream of a stream-bound session. It records its
// close once: when Close cancels it (Code ""), or when it ends first
// (Code "ended": the server said the session is over; "broken": the
// connection failed).
type Stream struct {
	d      *Driver
	name   string
	id     string
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	closed bool
}

// streamHTTP has no timeout: a stream lasts as long as its client wants.
var streamHTTP = &http.Client{Transport: bearer(operatorToken, &http.Transport{MaxIdleConnsPerHost: 4})}

// attachWithin is how long an open waits for its attached event.
const attachWithin = 3 * time.Second

// OpenStream opens the stream name of session id on d's node and waits
// for its attached event. On OK the returned Stream is open; otherwise
// it is nil, and op says why (Rejected: 404 session_not_found).
func (d *Driver) OpenStream(id, name string) (*Stream, check.Op) {
	op := check.Op{Kind: check.StreamOpen, Session: id, Value: name, Client: d.Client, Node: d.Node}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.Base+sessionPath(id, "/stream"), nil)
	timer := time.AfterFunc(attachWithin, cancel)
	op.Call = d.H.Now()
	resp, err := streamHTTP.Do(req)
	if err != nil {
		timer.Stop()
		cancel()
		op.Return, op.Err, op.Result = d.H.Now(), err.Error(), check.Unknown
		if errors.Is(err, syscall.ECONNREFUSED) {
			op.Result = check.Failed
		}
		return nil, d.H.Add(op)
	}
	op.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		timer.Stop()
		var p problem
		json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		cancel()
		op.Return, op.Code = d.H.Now(), p.Code
		if resp.StatusCode == http.StatusServiceUnavailable {
			op.RetryAfter = resp.Header.Get("Retry-After")
		}
		return nil, d.H.Add(classify(op, "session_not_found"))
	}
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	for err == nil && !strings.HasPrefix(line, "event: attached") {
		line, err = rd.ReadString('\n')
	}
	timer.Stop()
	op.Return = d.H.Now()
	s := &Stream{d: d, name: name, id: id, cancel: cancel, done: make(chan struct{})}
	if err != nil {
		// It may have attached before it broke: a close follows.
		op.Result, op.Err = check.Unknown, err.Error()
		resp.Body.Close()
		d.H.Add(op)
		s.end("broken")
		cancel()
		return nil, op
	}
	op.Result = check.OK
	op = d.H.Add(op)
	go s.read(rd, resp)
	return s, op
}

// read reads the stream until it ends, and records the end unless Close
// came first.
func (s *Stream) read(rd *bufio.Reader, resp *http.Response) {
	defer close(s.done)
	defer resp.Body.Close()
	code := "broken"
	for {
		line, err := rd.ReadString('\n')
		if strings.HasPrefix(line, "event: ended") {
			code = "ended"
		}
		if err != nil {
			break
		}
	}
	s.end(code)
}

// end records the stream's close with code ("" when cancelled) once.
func (s *Stream) end(code string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.closed = true
	now := s.d.H.Now()
	s.d.H.Add(check.Op{Kind: check.StreamClose, Session: s.id, Value: s.name, Client: s.d.Client, Node: s.d.Node,
		Call: now, Return: now, Result: check.OK, Code: code})
	return true
}

// Close cancels the stream, as a client that goes away does, and
// reports whether it was still open.
func (s *Stream) Close() bool {
	open := s.end("")
	s.cancel()
	<-s.done
	return open
}

// Done is closed once the stream has ended, by Close or by itself.
func (s *Stream) Done() <-chan struct{} { return s.done }
