package client

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// A request to yield asks a hold to give way and ends nothing: the
// holder decides whether to release. Anyone with the write role asks
// (Yield, YieldLeadership, YieldPermits, YieldRW); a holder hears it on
// its hold's YieldRequested channel, from the Client's one event stream,
// which follows every hold the Client keeps already (to tell Lost early).
// A holder that cannot read events (a credential without the read role)
// hears no request.

// YieldRequest is a request that a hold give way, as the audit trail's
// yield_requested event records it.
type YieldRequest struct {
	// Kind and Name are the thing's; Token the hold's asked.
	Kind  string
	Name  string
	Token int64
	// Owner is who asked, as the asker named itself (its address when
	// it did not), Credential the asker's credential's ID (empty without
	// authentication), and Reason its reason.
	Owner      string
	Credential string
	Reason     string
	// Revision and Time are the request's in the audit trail.
	Revision int64
	Time     time.Time
}

// YieldOptions say who asks a hold to yield and why. Every field is
// optional.
type YieldOptions struct {
	// Owner names the asker; empty: the client's address.
	Owner string
	// Reason says why, for the holders and the audit trail: at most
	// 1,024 bytes.
	Reason string
	// Token asks only the hold of that token (one permit of a semaphore,
	// one hold of a read/write lock); 0 asks every hold.
	Token int64
}

// YieldRequested is what a request to yield asked: the tokens of the
// holds asked, each of which got a yield_requested event at Revision.
type YieldRequested struct {
	Kind        string
	Name        string
	Tokens      []int64
	Owner       string
	Reason      string
	RequestedAt time.Time
	Revision    int64
}

// Yield asks whoever holds the lock name to release it, and returns what
// was asked; the holder decides. ErrNotHeld when nothing holds it (with
// o.Token: nothing with that token). Not retried: a repeat would ask
// twice. On ErrUnavailable the outcome is unknown.
func (c *Client) Yield(ctx context.Context, name string, o YieldOptions) (*YieldRequested, error) {
	return c.yield(ctx, fmt.Sprintf("ask lock %q to yield", name), "/v1/locks/"+pathEscape(name), o)
}

// YieldLeadership asks the leader of election name to resign, as Yield
// asks a lock's holder. ErrNoLeader when nobody leads.
func (c *Client) YieldLeadership(ctx context.Context, name string, o YieldOptions) (*YieldRequested, error) {
	return c.yield(ctx, fmt.Sprintf("ask the leader of %q to yield", name), electionPath(name), o)
}

// YieldPermits asks the holders of semaphore name's permits (with
// o.Token, that permit's alone; else the oldest 128) to give them back,
// as Yield asks a lock's holder. ErrNotHeld when none is held.
func (c *Client) YieldPermits(ctx context.Context, name string, o YieldOptions) (*YieldRequested, error) {
	return c.yield(ctx, fmt.Sprintf("ask the permits of %q to yield", name), "/v1/semaphores/"+pathEscape(name), o)
}

// YieldRW asks the holds of read/write lock name (with o.Token, that
// hold alone; else the oldest 128, readers and writer) to release, as
// Yield asks a lock's holder. ErrNotHeld when nothing holds it.
func (c *Client) YieldRW(ctx context.Context, name string, o YieldOptions) (*YieldRequested, error) {
	return c.yield(ctx, fmt.Sprintf("ask the holds of rwlock %q to yield", name), "/v1/rwlocks/"+pathEscape(name), o)
}

func (c *Client) yield(ctx context.Context, op, path string, o YieldOptions) (*YieldRequested, error) {
	body := struct {
		Owner  string `json:"owner,omitempty"`
		Reason string `json:"reason,omitempty"`
		Token  int64  `json:"token,omitempty"`
	}{o.Owner, o.Reason, o.Token}
	var w struct {
		Kind        string   `json:"kind"`
		Name        string   `json:"name"`
		Tokens      []int64  `json:"tokens"`
		Owner       string   `json:"owner"`
		Reason      string   `json:"reason"`
		RequestedAt wireTime `json:"requested_at"`
		Revision    int64    `json:"revision"`
	}
	if _, err := c.do(ctx, request{op: op, method: http.MethodPost, path: path + "/yield", body: body}, &w); err != nil {
		return nil, err
	}
	return &YieldRequested{Kind: w.Kind, Name: w.Name, Tokens: w.Tokens, Owner: w.Owner, Reason: w.Reason,
		RequestedAt: time.Time(w.RequestedAt), Revision: w.Revision}, nil
}

// yieldBuffer is how many requests a hold's YieldRequested channel
// holds unread, and how many wait for its first call; more are dropped,
// since a holder with unread requests knows already that it is asked.
const yieldBuffer = 16

// yieldRequested returns h's channel of requests to yield, made on the
// first call with the requests heard before it. It is closed when h is
// no longer kept.
func (h *hold) yieldRequested() <-chan YieldRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.yields == nil {
		h.yields = make(chan YieldRequest, yieldBuffer)
		for _, y := range h.heardYields {
			h.yields <- y
		}
		h.heardYields = nil
		if h.finished {
			close(h.yields)
		}
	}
	return h.yields
}

// askedToYield delivers ev, a yield_requested event of h's, without
// blocking the Client's event stream.
func (h *hold) askedToYield(ev Event) {
	y := YieldRequest{Kind: ev.Kind, Name: ev.Name, Token: ev.Token, Owner: ev.Owner, Credential: ev.Credential,
		Reason: ev.Reason, Revision: ev.Revision, Time: ev.Time}
	if y.Kind == "" || y.Kind == kindLock {
		y.Kind, y.Name = kindLock, eventHold(ev).name
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.finished:
	case h.yields == nil:
		if len(h.heardYields) < yieldBuffer {
			h.heardYields = append(h.heardYields, y)
		}
	default:
		select {
		case h.yields <- y:
		default:
		}
	}
}
