package client

import (
	"context"
	"net/http"
	"time"

	"github.com/baton-dev/baton/problem"
)

var (
	// ErrNoSpace: the node's data store (etcd) is full, its NOSPACE
	// alarm raised; no write succeeds until an operator recovers (see
	// Recover). Nothing was written. Being a 5xx, it matches
	// ErrUnavailable too, but retrying does not help.
	ErrNoSpace = Sentinel(problem.InsufficientStorage)
	// ErrStillFull: Recover freed too little space to disarm the alarm;
	// Error.Detail says what holds the space.
	ErrStillFull = Sentinel(problem.StillFull)
)

// RecoverResult is what Recover did.
type RecoverResult struct {
	// CompactedRevision is the revision etcd's history was compacted to.
	CompactedRevision int64 `json:"compacted_revision"`
	// Defragmented names the etcd members defragmented, in order.
	Defragmented []string `json:"defragmented"`
	// Alarms are the alarms still raised afterwards; empty on success.
	Alarms []string `json:"alarms"`
	// DBSize is the largest member's backend, in bytes, afterwards, and
	// Quota the backend quota.
	DBSize int64 `json:"db_size"`
	Quota  int64 `json:"quota"`
}

// recoverTimeout bounds one attempt of Recover: each member blocks while
// it is defragmented, about a second per few hundred MB of backend.
const recoverTimeout = 10 * time.Minute

// Recover frees the data store's space after etcd's NOSPACE alarm (an
// operator's action, role admin): the node compacts etcd's history,
// defragments every member one at a time and disarms the alarm. It
// returns ErrStillFull when what is kept leaves too little room. Every
// step is safe to repeat, but a repeat blocks each member once more while
// it defragments, so a 503 (a member the node could not reach) is not
// retried: it is returned, naming the member, for the operator to act on.
func (c *Client) Recover(ctx context.Context) (*RecoverResult, error) {
	var r RecoverResult
	if _, err := c.do(ctx, request{
		op: "recover", method: http.MethodPost, path: "/v1/maintenance/recover", timeout: recoverTimeout,
	}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
