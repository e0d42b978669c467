package lock

import (
	"context"
	"encoding/json"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// HistoryOptions selects audit events.
type HistoryOptions struct {
	// Lock keeps only the events of one lock.
	Lock string
	// Before keeps only events recorded before this revision; 0 means now.
	Before int64
	// Limit is the page size; 0 means 100.
	Limit int
}

// History returns audit events newest first, and the Before of the next
// page (0 when this is the last page). A page never ends between events of
// one revision, so it holds more than Limit events when more than Limit
// share a revision.
//
// etcd sorts by revision only after reading the whole range, so a page
// costs time in proportion to the events retained (for the lock, with
// Lock set). Retention bounds that; the live event index of the SSE stream
// is the place to make it cheaper.
func (e *Engine) History(ctx context.Context, o HistoryOptions) ([]Event, int64, error) {
	if o.Limit == 0 {
		o.Limit = 100
	}
	if o.Limit < 1 || o.Limit > MaxListLimit {
		return nil, 0, invalid("limit", "must be between 1 and %d", MaxListLimit)
	}
	if o.Before < 0 {
		return nil, 0, invalid("before", "must be a positive revision")
	}
	prefix := e.auditPrefix()
	if o.Lock != "" {
		if err := checkName("lock", o.Lock); err != nil {
			return nil, 0, err
		}
		prefix = e.lockAuditPrefix(o.Lock)
	}
	opts := []clientv3.OpOption{
		clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend),
		clientv3.WithLimit(int64(o.Limit + 1)),
	}
	if o.Before > 0 {
		opts = append(opts, clientv3.WithMaxModRev(o.Before-1))
	}
	octx, done := e.op(ctx)
	defer done()
	resp, err := e.cli.Get(octx, prefix, opts...)
	if err != nil {
		return nil, 0, e.etcdErr(ctx, "read history", err)
	}
	kvs, next := resp.Kvs, int64(0)
	if len(kvs) > o.Limit {
		// Fix (found by api's TestHistory_PagingKeepsEventsThatShareARevision):
		// one txn may record several events at one revision (deleting a
		// session releases its locks together), and the next page starts
		// below next, so a page must not end inside such a group. End it
		// before the group; if the group fills the page, return all of it
		// (the only case where a page exceeds Limit).
		cut, n := kvs[o.Limit].ModRevision, o.Limit
		for n > 0 && kvs[n-1].ModRevision == cut {
			n--
		}
		if n == 0 {
			group, err := e.cli.Get(octx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision),
				clientv3.WithMinModRev(cut), clientv3.WithMaxModRev(cut))
			if err != nil {
				return nil, 0, e.etcdErr(ctx, "read history", err)
			}
			kvs = group.Kvs
		} else {
			kvs = kvs[:n]
		}
		next = kvs[len(kvs)-1].ModRevision
	}
	events := make([]Event, 0, len(kvs))
	for _, kv := range kvs {
		ev, ok := decodeEvent(kv)
		if ok {
			events = append(events, ev)
		}
	}
	return events, next, nil
}

func decodeEvent(kv *mvccpb.KeyValue) (Event, bool) {
	var ev Event
	if json.Unmarshal(kv.Value, &ev) != nil {
		return ev, false
	}
	ev.Revision = kv.ModRevision
	if ev.Type == EventAcquired {
		// Written in the acquire txn, before the token existed: the
		// record's own revision is the token.
		ev.Token = kv.CreateRevision
	}
	return ev, true
}
