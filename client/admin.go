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
	q := url.Values{}
	if reason != "" {
		q.Set("reason", reason)
	}
	_, err := c.do(ctx, request{
		op: fmt.Sprintf("clear the lock-delay of %q", name), method: http.MethodDelete,
		path: "/v1/locks/" + pathEscape(name) + "/delay", query: q,
	}, nil)
	return err
}

// ResetFenced removes a fenced register's value and its largest-token
// record (an operator's call: the admin role with auth on), audited as
// fence_reset with reason, so that the next write with any issued token is
// accepted. It returns ErrNotFound when the resource holds nothing.
func (c *Client) ResetFenced(ctx context.Context, resource, reason string) error {
	q := url.Values{}
	if reason != "" {
		q.Set("reason", reason)
	}
	_, err := c.do(ctx, request{
		op: fmt.Sprintf("reset fenced %q", resource), method: http.MethodDelete,
		path: "/v1/fenced/" + pathEscape(resource), query: q,
	}, nil)
	return err
}
