package client

import (
	"context"
	"net/http"
)

// Sessions returns a page of live sessions sorted by owner, then ID, and
// the cursor of the next page, empty on the last page. o.Prefix keeps the
// sessions whose owner starts with it. A listed session's Locks are nil:
// the listing does not read them; GetSession does. Retried.
func (c *Client) Sessions(ctx context.Context, o ListOptions) ([]Session, string, error) {
	q := o.query()
	var w struct {
		Sessions   []wireSession `json:"sessions"`
		NextCursor string        `json:"next_cursor"`
	}
	if _, err := c.do(ctx, request{op: "list sessions", method: http.MethodGet, path: "/v1/sessions", query: q, idempotent: true}, &w); err != nil {
		return nil, "", err
	}
	out := make([]Session, len(w.Sessions))
	for i := range w.Sessions {
		out[i] = *w.Sessions[i].session()
	}
	return out, w.NextCursor, nil
}
