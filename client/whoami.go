package client

import (
	"context"
	"net/http"
)

// Whoami is who a client's token speaks for and what it may do.
type Whoami struct {
	// Authentication is false when the node checks no token: every
	// request may then do everything (Rules is one rule "": admin).
	Authentication bool `json:"authentication"`
	// Credential is the credential's ID: its name in the node's policy
	// file, or "cred-…" for a line of the line format. Never the token.
	Credential string `json:"credential,omitempty"`
	// Rules give a role on the names under each prefix, sorted by
	// prefix; of those a name starts with, the longest decides, and a
	// name none covers may be neither touched nor seen.
	Rules []Rule `json:"rules"`
	// Quotas are the credential's quotas that are set; nil when none is.
	Quotas *Quotas `json:"quotas,omitempty"`
	// Usage is what the quotas of holds, sessions and waiters count now,
	// each only when that quota is set; nil when none of them is.
	Usage *QuotaUsage `json:"usage,omitempty"`
}

// Rule gives Role ("read", "write" or "admin") on the names that start
// with Prefix ("": every name).
type Rule struct {
	Prefix string `json:"prefix"`
	Role   string `json:"role"`
}

// Quotas bound what a credential may use, 0 meaning no bound: its holds
// and sessions across the cluster, its waiting acquires and event
// streams on each node, and its requests a second (Rate, Burst).
type Quotas struct {
	Holds    int     `json:"holds,omitempty"`
	Sessions int     `json:"sessions,omitempty"`
	Waiters  int     `json:"waiters,omitempty"`
	Streams  int     `json:"streams,omitempty"`
	Rate     float64 `json:"rate,omitempty"`
	Burst    int     `json:"burst,omitempty"`
}

// QuotaUsage is what a credential's quotas count now: its holds and
// sessions across the cluster (a waiting acquire's hold included), its
// acquires waiting on the node asked. A count is nil when its quota is
// not set.
type QuotaUsage struct {
	Holds    *int `json:"holds,omitempty"`
	Sessions *int `json:"sessions,omitempty"`
	Waiters  *int `json:"waiters,omitempty"`
}

// Whoami returns who the client's token speaks for, its rules and its
// quotas with what they count now (any credential may ask). Retried.
func (c *Client) Whoami(ctx context.Context) (*Whoami, error) {
	var w Whoami
	if _, err := c.do(ctx, request{op: "whoami", method: http.MethodGet, path: "/v1/whoami", idempotent: true}, &w); err != nil {
		return nil, err
	}
	return &w, nil
}
