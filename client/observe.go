package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
)

// LeaderChange is an election's state from Revision on.
type LeaderChange struct {
	// Revision is the etcd revision of the change.
	Revision int64
	// Leader is who leads from then on, or nil when nobody does. It has
	// no TTL or ExpiresAt (Leader reads them), and a proclaim seen
	// without its election (after a resume) has no ElectedAt.
	Leader *LeaderInfo
}

// Observe streams the changes of the election name
// (GET /v1/elections/{name}/observe): first the state it is in now, then
// each change in order, one per revision: a leader elected, a new value
// proclaimed, or nobody leading. A resignation that hands over is one
// change, to the next leader. When the stream breaks it reconnects by
// itself, to the next endpoint, with Last-Event-ID, and resumes after the
// last change delivered, without a gap or a repeat.
//
// The change channel is closed when the stream ends: when ctx ends, or
// when a node refuses the request itself (an invalid name, no valid
// bearer token). The error channel then yields why, once, and is closed.
func (c *Client) Observe(ctx context.Context, name string) (<-chan LeaderChange, <-chan error) {
	out := make(chan LeaderChange, 16)
	o := &observeSource{name: name, out: out}
	return out, c.stream(ctx, "observe "+strconv.Quote(name), 0, o, func() { close(out) })
}

// observeSource is the state of Observe across connections.
type observeSource struct {
	name string
	out  chan<- LeaderChange
	// last is the revision of the latest change delivered: a connection
	// resumes after it. 0 until the first, so that the first connection
	// that delivers anything starts with the state.
	last int64
}

func (o *observeSource) prepare(context.Context) (bool, error) { return true, nil }

func (o *observeSource) target() (string, url.Values, int64) {
	return electionPath(o.name) + "/observe", nil, o.last
}

func (o *observeSource) dispatch(ctx context.Context, id, typ, data string) error {
	rev, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: observe: bad id %.40q", ErrUnavailable, id)
	}
	ch := LeaderChange{Revision: rev}
	switch typ {
	case "leader":
		var w wireLeader
		if err := json.Unmarshal([]byte(data), &w); err != nil {
			return fmt.Errorf("%w: observe: bad leader %.100q: %w", ErrUnavailable, data, err)
		}
		ch.Leader = w.info()
	case "vacant":
	default:
		return nil // a kind of message this client does not know
	}
	if o.last > 0 && rev <= o.last {
		return nil // delivered already
	}
	select {
	case o.out <- ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	o.last = rev
	return nil
}
