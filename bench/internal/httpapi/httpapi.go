package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/load"
)

// Client calls baton's HTTP API as a plain client would: JSON over
// keep-alive connections, nothing cached.
type Client struct {
	base string
	hc   *http.Client
	// token, when set, is sent instead of Token.
	token string
}

// Token, when set, is sent as every request's bearer token (the bench's
// -auth-rules). Set it before the first client is made.
var Token string

// RequestTimeout bounds every request, so a wedged server fails the run
// instead of hanging it; the longest request is a contender's wait.
const RequestTimeout = contend.Wait + 30*time.Second

// New returns a client that keeps up to conns idle connections, one per
// concurrent caller, so no cycle pays for a TCP handshake.
func New(base string, conns int) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = conns
	tr.MaxIdleConnsPerHost = conns
	return &Client{base: base, hc: &http.Client{Transport: tr, Timeout: RequestTimeout}}
}

// As is a client like a that sends token instead of Token.
func (a *Client) As(token string) *Client {
	c := *a
	c.token = token
	return &c
}

// AcquireBody is the body of POST /v1/locks/{name}, or of a campaign
// (POST /v1/elections/{name}/campaign) with Candidate set, of a permit
// (POST /v1/semaphores/{name}) with Limit, of a read/write lock's hold
// (POST /v1/rwlocks/{name}) with Mode. Each caller encodes its own once
// and reuses it for every cycle.
type AcquireBody struct {
	Owner string `json:"owner,omitempty"`
	Limit int    `json:"limit,omitempty"`
	Mode  string `json:"mode,omitempty"`
	// Candidate instead of Owner makes it a campaign's body.
	Candidate string `json:"candidate,omitempty"`
	TTL       string `json:"ttl,omitempty"`
	Session   string `json:"session,omitempty"`
	Wait      string `json:"wait,omitempty"`
}

// Encode is b as JSON.
func (b AcquireBody) Encode() []byte {
	out, err := json.Marshal(b)
	if err != nil {
		panic(err) // a struct of strings and an int always encodes
	}
	return out
}

// Call sends one request and fails unless the answer has status want;
// out, when given, receives the decoded body.
func (a *Client) Call(ctx context.Context, method, path string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok := cmp.Or(a.token, Token); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// Read to the end, or the connection cannot be reused.
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// Acquire takes a lock that must be free (or become free within the
// body's wait) and returns its fencing token.
func (a *Client) Acquire(ctx context.Context, name string, body []byte) (int64, error) {
	var l struct {
		Token int64 `json:"token"`
	}
	err := a.Call(ctx, http.MethodPost, "/v1/locks/"+name, body, http.StatusCreated, &l)
	return l.Token, err
}

// Release releases the hold of token on the lock name.
func (a *Client) Release(ctx context.Context, name string, token int64) error {
	return a.Call(ctx, http.MethodDelete, "/v1/locks/"+name+"?token="+strconv.FormatInt(token, 10), nil, http.StatusNoContent, nil)
}

// CreateSession makes a session with the bench's TTL and returns its id.
func (a *Client) CreateSession(ctx context.Context, owner string) (string, error) {
	body, err := json.Marshal(map[string]string{"owner": owner, "ttl": load.SessionTTL.String()})
	if err != nil {
		return "", err
	}
	var s struct {
		ID string `json:"id"`
	}
	err = a.Call(ctx, http.MethodPost, "/v1/sessions", body, http.StatusCreated, &s)
	return s.ID, err
}

// RenewSession renews the session id.
func (a *Client) RenewSession(ctx context.Context, id string) error {
	return a.Call(ctx, http.MethodPost, "/v1/sessions/"+id+"/renew", nil, http.StatusOK, nil)
}

// DeleteSession ends the session id.
func (a *Client) DeleteSession(ctx context.Context, id string) error {
	return a.Call(ctx, http.MethodDelete, "/v1/sessions/"+id, nil, http.StatusNoContent, nil)
}

// Hold takes a permit or a read/write lock's hold at path, waiting as
// the body says, and returns its token.
func (a *Client) Hold(ctx context.Context, path string, body []byte) (int64, error) {
	var h struct {
		Token int64 `json:"token"`
	}
	err := a.Call(ctx, http.MethodPost, path, body, http.StatusCreated, &h)
	return h.Token, err
}

// Unhold gives back the hold of token at path.
func (a *Client) Unhold(ctx context.Context, path string, token int64) error {
	return a.Call(ctx, http.MethodDelete, path+"?token="+strconv.FormatInt(token, 10), nil, http.StatusNoContent, nil)
}

// Campaign leads name, waiting as the body says, and returns the
// leadership's token.
func (a *Client) Campaign(ctx context.Context, name string, body []byte) (int64, error) {
	var l struct {
		Token int64 `json:"token"`
	}
	err := a.Call(ctx, http.MethodPost, "/v1/elections/"+name+"/campaign", body, http.StatusCreated, &l)
	return l.Token, err
}

// Resign ends the leadership of token of the election name.
func (a *Client) Resign(ctx context.Context, name string, token int64) error {
	return a.Call(ctx, http.MethodDelete, "/v1/elections/"+name+"/leader?token="+strconv.FormatInt(token, 10), nil, http.StatusNoContent, nil)
}

// AcquireSet takes the set the body names (waiting as it says), checks
// that the answer has size locks, every one with the set's token, and
// returns the token.
func (a *Client) AcquireSet(ctx context.Context, body []byte, size int) (int64, error) {
	var s struct {
		Token int64 `json:"token"`
		Locks []struct {
			Name  string `json:"name"`
			Token int64  `json:"token"`
		} `json:"locks"`
	}
	if err := a.Call(ctx, http.MethodPost, "/v1/locksets", body, http.StatusCreated, &s); err != nil {
		return 0, err
	}
	if len(s.Locks) != size {
		return 0, fmt.Errorf("POST /v1/locksets: %d locks granted, want %d", len(s.Locks), size)
	}
	for _, l := range s.Locks {
		if l.Token != s.Token {
			return 0, fmt.Errorf("POST /v1/locksets: lock %s has token %d, the set %d", l.Name, l.Token, s.Token)
		}
	}
	return s.Token, nil
}

// ReleaseSet releases the set of names held with token.
func (a *Client) ReleaseSet(ctx context.Context, names []string, token int64) error {
	body := MustJSON(map[string]any{"names": names, "token": token})
	return a.Call(ctx, http.MethodPost, "/v1/locksets/release", body, http.StatusNoContent, nil)
}

// MustJSON encodes a map of plain values, which cannot fail.
func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
