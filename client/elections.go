package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// This file holds the plain calls of elections, retried as the lock calls
// are (calls.go): reads, renew, proclaim and resign name the leadership's
// token and are retried; a campaign outside a session and a revoke are
// not.

// LeaderInfo describes an election's leadership.
type LeaderInfo struct {
	Name      string
	Candidate string
	// Value is the leader's value as JSON: what it campaigned with, or
	// what it proclaimed since; "null" when it gave none.
	Value json.RawMessage
	// Token is the leadership's fencing token, from the same sequence as
	// lock tokens: pass it to whatever the leader writes to.
	Token int64
	// Term counts the leaders the election has had, this one included.
	Term    int64
	Session string
	// TTL and ExpiresAt are the lease's; a change from Observe has
	// neither (they move with every renewal).
	TTL       time.Duration
	ElectedAt time.Time
	ExpiresAt time.Time
	LockDelay time.Duration
	MinHold   time.Duration
	Metadata  map[string]string
	// Candidates are those waiting, in the order they would lead; only
	// Leader fills them in.
	Candidates []Candidate
}

// Candidate is a campaign waiting to lead.
type Candidate struct {
	Candidate string
	Session   string
	Position  int
	Since     time.Time
}

type wireLeader struct {
	Name       string            `json:"name"`
	Candidate  string            `json:"candidate"`
	Value      json.RawMessage   `json:"value"`
	Token      int64             `json:"token"`
	Term       int64             `json:"term"`
	Session    string            `json:"session"`
	TTL        wireDuration      `json:"ttl"`
	ElectedAt  wireTime          `json:"elected_at"`
	ExpiresAt  wireTime          `json:"expires_at"`
	LockDelay  wireDuration      `json:"lock_delay"`
	MinHold    wireDuration      `json:"min_hold"`
	Metadata   map[string]string `json:"metadata"`
	Candidates []struct {
		Candidate string   `json:"candidate"`
		Session   string   `json:"session"`
		Position  int      `json:"position"`
		Since     wireTime `json:"since"`
	} `json:"candidates"`
}

func (w *wireLeader) info() *LeaderInfo {
	l := &LeaderInfo{
		Name: w.Name, Candidate: w.Candidate, Value: w.Value, Token: w.Token, Term: w.Term, Session: w.Session,
		TTL: time.Duration(w.TTL), ElectedAt: time.Time(w.ElectedAt), ExpiresAt: time.Time(w.ExpiresAt),
		LockDelay: time.Duration(w.LockDelay), MinHold: time.Duration(w.MinHold), Metadata: w.Metadata,
	}
	for _, x := range w.Candidates {
		l.Candidates = append(l.Candidates, Candidate{Candidate: x.Candidate, Session: x.Session, Position: x.Position, Since: time.Time(x.Since)})
	}
	return l
}

func electionPath(name string) string { return "/v1/elections/" + pathEscape(name) }

// Leader returns who leads the election, with the candidates waiting in
// the order they would lead. It returns ErrNoLeader when nobody leads.
// Retried.
func (c *Client) Leader(ctx context.Context, name string) (*LeaderInfo, error) {
	var w wireLeader
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("get election %q", name), method: http.MethodGet, path: electionPath(name), idempotent: true,
	}, &w); err != nil {
		return nil, err
	}
	return w.info(), nil
}

// Elections returns a page of the elections that have a leader, sorted by
// name, and the cursor of the next page, empty on the last. Retried.
func (c *Client) Elections(ctx context.Context, o ListOptions) ([]LeaderInfo, string, error) {
	var w struct {
		Elections  []wireLeader `json:"elections"`
		NextCursor string       `json:"next_cursor"`
	}
	if _, err := c.do(ctx, request{op: "list elections", method: http.MethodGet, path: "/v1/elections", query: o.query(), idempotent: true}, &w); err != nil {
		return nil, "", err
	}
	out := make([]LeaderInfo, len(w.Elections))
	for i := range w.Elections {
		out[i] = *w.Elections[i].info()
	}
	return out, w.NextCursor, nil
}

// Proclaim sets the value of the leadership that token holds (anything
// encoding/json can encode; a json.RawMessage goes as is; nil is null),
// keeping its token and term, and returns the leadership. It returns
// ErrNoLeader or ErrTokenMismatch when token does not lead name. Retried:
// a repeat names the same token and sets the same value. A *Leadership
// proclaims with its own Proclaim.
func (c *Client) Proclaim(ctx context.Context, name string, token int64, value any) (*LeaderInfo, error) {
	var w wireLeader
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("proclaim in %q", name), method: http.MethodPost, path: electionPath(name) + "/proclaim",
		body: struct {
			Token int64 `json:"token"`
			Value any   `json:"value"`
		}{token, value}, idempotent: true,
	}, &w); err != nil {
		return nil, err
	}
	return w.info(), nil
}

// TransferLeadership ends the leadership that token holds of the
// election name in favour of the candidate to, waiting in line: in one
// transaction to leads, ahead of the line, with the next term; its
// campaign returns that leadership. It returns the new leadership.
// ErrCandidateNotWaiting when no campaign of to waits (the leader still
// leads); ErrElectionHeld, with RetryAfter, inside the leadership's
// at-least window; ErrNoLeader or ErrTokenMismatch when token no longer
// leads. Retried: a repeat after it applied answers ErrTokenMismatch.
// A *Leadership transfers itself (Leadership.Transfer).
func (c *Client) TransferLeadership(ctx context.Context, name string, token int64, to string) (*LeaderInfo, error) {
	var w wireLeader
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("transfer leadership of %q to %q", name, to), method: http.MethodPost, path: electionPath(name) + "/leader/transfer",
		body: struct {
			Token int64  `json:"token"`
			To    string `json:"to"`
		}{token, to}, idempotent: true,
	}, &w); err != nil {
		return nil, err
	}
	return w.info(), nil
}

// RenewLeadership extends the lease of the leadership that token holds
// (in a session: the session's lease), and returns it with its new
// expiry. It returns ErrNoLeader or ErrTokenMismatch when token no longer
// leads. Retried. A *Leadership renews itself: this is for leaders that
// keep the token only.
func (c *Client) RenewLeadership(ctx context.Context, name string, token int64) (*LeaderInfo, error) {
	return c.renewLeadership(ctx, name, token, 0)
}

func (c *Client) renewLeadership(ctx context.Context, name string, token int64, timeout time.Duration) (*LeaderInfo, error) {
	var w wireLeader
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("renew leadership of %q", name), method: http.MethodPost, path: electionPath(name) + "/renew",
		body: struct {
			Token int64 `json:"token"`
		}{token}, idempotent: true, timeout: timeout,
	}, &w); err != nil {
		return nil, err
	}
	return w.info(), nil
}

// ResignLeadership ends the leadership that token holds; the first
// candidate in line leads next. A stale token never touches a newer
// leader: it returns ErrTokenMismatch, and ErrNoLeader when nobody leads.
// Retried, as Release is.
func (c *Client) ResignLeadership(ctx context.Context, name string, token int64) error {
	_, err := c.do(ctx, request{
		op: fmt.Sprintf("resign from %q", name), method: http.MethodDelete, path: electionPath(name) + "/leader",
		query: url.Values{"token": {strconv.FormatInt(token, 10)}}, idempotent: true,
	}, nil)
	return err
}

// RevokeLeadership deposes whoever leads the election (an operator's
// action), recorded with reason; the first candidate in line leads next,
// after the leadership's lock-delay if it had one. It returns ErrNoLeader
// when nobody leads. Not retried: it names no token, so a repeat could
// depose the next leader. On ErrUnavailable the outcome is unknown.
func (c *Client) RevokeLeadership(ctx context.Context, name, reason string) error {
	var body any
	if reason != "" {
		body = struct {
			Reason string `json:"reason"`
		}{reason}
	}
	_, err := c.do(ctx, request{
		op: fmt.Sprintf("revoke leadership of %q", name), method: http.MethodPost, path: electionPath(name) + "/revoke", body: body,
	}, nil)
	return err
}

// campaign sends the campaign request, which waits up to wait, and with
// keep keeps the session's place in line when that runs out. sent is
// when it left, on the monotonic clock: whatever lease the server grants,
// it grants after that.
func (c *Client) campaign(ctx context.Context, op, name string, o CampaignOptions, wait time.Duration, keep bool) (info *LeaderInfo, status int, sent time.Time, err error) {
	body := struct {
		Candidate string            `json:"candidate,omitempty"`
		Value     any               `json:"value,omitempty"`
		TTL       string            `json:"ttl,omitempty"`
		Session   string            `json:"session,omitempty"`
		Wait      string            `json:"wait,omitempty"`
		KeepPlace bool              `json:"keep_place,omitempty"`
		LockDelay string            `json:"lock_delay,omitempty"`
		MinHold   string            `json:"min_hold,omitempty"`
		Metadata  map[string]string `json:"metadata,omitempty"`
	}{Candidate: o.Candidate, Value: o.Value, Session: o.Session, KeepPlace: keep, Metadata: o.Metadata}
	for _, d := range []struct {
		to *string
		d  time.Duration
	}{{&body.TTL, o.TTL}, {&body.Wait, wait}, {&body.LockDelay, o.LockDelay}, {&body.MinHold, o.MinHold}} {
		if d.d != 0 {
			*d.to = d.d.String()
		}
	}
	sent = time.Now()
	var w wireLeader
	status, err = c.do(ctx, request{
		op: op, method: http.MethodPost, path: electionPath(name) + "/campaign", body: body,
		// In a session the server answers a leadership the session holds
		// (200), so a repeat cannot win a second one.
		idempotent: o.Session != "", timeout: c.timeout + max(wait, 0),
	}, &w)
	if err != nil {
		return nil, status, sent, err
	}
	return w.info(), status, sent, nil
}
