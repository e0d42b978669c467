package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// httpAPI calls baton's HTTP API as a plain client would: JSON over
// keep-alive connections, nothing cached.
type httpAPI struct {
	base string
	hc   *http.Client
}

// requestTimeout bounds every request, so a wedged server fails the run
// instead of hanging it; the longest request is a contender's wait.
const requestTimeout = contentionWait + 30*time.Second

// newAPI returns a client that keeps up to conns idle connections, one per
// concurrent caller, so no cycle pays for a TCP handshake.
func newAPI(base string, conns int) *httpAPI {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = conns
	tr.MaxIdleConnsPerHost = conns
	return &httpAPI{base: base, hc: &http.Client{Transport: tr, Timeout: requestTimeout}}
}

// acquireBody is the body of POST /v1/locks/{name}, or of a campaign
// (POST /v1/elections/{name}/campaign) with Candidate set, of a permit
// (POST /v1/semaphores/{name}) with Limit, of a read/write lock's hold
// (POST /v1/rwlocks/{name}) with Mode. Each caller encodes its own once
// and reuses it for every cycle.
type acquireBody struct {
	Owner string `json:"owner,omitempty"`
	Limit int    `json:"limit,omitempty"`
	Mode  string `json:"mode,omitempty"`
	// Candidate instead of Owner makes it a campaign's body.
	Candidate string `json:"candidate,omitempty"`
	TTL       string `json:"ttl,omitempty"`
	Session   string `json:"session,omitempty"`
	Wait      string `json:"wait,omitempty"`
}

func (b acquireBody) encode() []byte {
	out, err := json.Marshal(b)
	if err != nil {
		panic(err) // a struct of strings and an int always encodes
	}
	return out
}

// call sends one request and fails unless the answer has status want;
// out, when given, receives the decoded body.
func (a *httpAPI) call(ctx context.Context, method, path string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
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

// acquire takes a lock that must be free (or become free within the
// body's wait) and returns its fencing token.
func (a *httpAPI) acquire(ctx context.Context, name string, body []byte) (int64, error) {
	var l struct {
		Token int64 `json:"token"`
	}
	err := a.call(ctx, http.MethodPost, "/v1/locks/"+name, body, http.StatusCreated, &l)
	return l.Token, err
}

func (a *httpAPI) release(ctx context.Context, name string, token int64) error {
	return a.call(ctx, http.MethodDelete, "/v1/locks/"+name+"?token="+strconv.FormatInt(token, 10), nil, http.StatusNoContent, nil)
}

// createSession makes a session with the bench's TTL and returns its id.
func (a *httpAPI) createSession(ctx context.Context, owner string) (string, error) {
	body, err := json.Marshal(map[string]string{"owner": owner, "ttl": sessionTTL.String()})
	if err != nil {
		return "", err
	}
	var s struct {
		ID string `json:"id"`
	}
	err = a.call(ctx, http.MethodPost, "/v1/sessions", body, http.StatusCreated, &s)
	return s.ID, err
}

func (a *httpAPI) renewSession(ctx context.Context, id string) error {
	return a.call(ctx, http.MethodPost, "/v1/sessions/"+id+"/renew", nil, http.StatusOK, nil)
}

func (a *httpAPI) deleteSession(ctx context.Context, id string) error {
	return a.call(ctx, http.MethodDelete, "/v1/sessions/"+id, nil, http.StatusNoContent, nil)
}
