package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// ClearDelay lifts the lock-delay of a free lock (an operator's call: the
// admin role with auth on), audited as delay_cleared with reason. It
// returns ErrNotDelayed when the lock is under no delay.
func (c *Client) ClearDelay(ctx context.Context, name, reason string) error {
	return c.adminDelete(ctx, fmt.Sprintf("clear the lock-delay of %q", name), "/v1/locks/"+pathEscape(name)+"/delay", reason)
}

// ResetFenced removes a fenced register's value and its largest-token
// record (an operator's call: the admin role with auth on), audited as
// fence_reset with reason, so that the next write with any issued token is
// accepted. It returns ErrNotFound when the resource holds nothing.
func (c *Client) ResetFenced(ctx context.Context, resource, reason string) error {
	return c.adminDelete(ctx, fmt.Sprintf("reset fenced %q", resource), "/v1/fenced/"+pathEscape(resource), reason)
}

// adminDelete sends an operator's DELETE with its audited reason. It is
// not retried: a repeat after an answer lost on the way would be refused
// (the first one did its work), and say so as an error.
func (c *Client) adminDelete(ctx context.Context, op, path, reason string) error {
	q := url.Values{}
	if reason != "" {
		q.Set("reason", reason)
	}
	_, err := c.do(ctx, request{op: op, method: http.MethodDelete, path: path, query: q}, nil)
	return err
}
