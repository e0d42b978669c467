package lock

import (
	"context"
	"sort"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is one etcd member of the cluster.
type Member struct {
	ID         string
	Name       string
	PeerURLs   []string
	ClientURLs []string
	IsLeader   bool
}

// ClusterStatus describes the etcd cluster as the member behind the
// engine's client sees it.
type ClusterStatus struct {
	Members  []Member
	Leader   string
	RaftTerm uint64
	Revision int64
}

// Cluster returns the members, the leader, the raft term and the current
// revision.
func (e *Engine) Cluster(ctx context.Context) (*ClusterStatus, error) {
	octx, done := e.op(ctx)
	defer done()
	ml, err := e.cli.MemberList(octx)
	if err != nil {
		return nil, e.etcdErr(ctx, "list members", err)
	}
	// The in-process client ignores the endpoint; a remote one asks the
	// first endpoint it was given.
	ep := ""
	if eps := e.cli.Endpoints(); len(eps) > 0 {
		ep = eps[0]
	}
	st, err := e.cli.Status(octx, ep)
	if err != nil {
		return nil, e.etcdErr(ctx, "member status", err)
	}
	cs := &ClusterStatus{RaftTerm: st.RaftTerm, Revision: st.Header.Revision, Leader: strconv.FormatUint(st.Leader, 16)}
	for _, m := range ml.Members {
		cs.Members = append(cs.Members, Member{
			ID: strconv.FormatUint(m.ID, 16), Name: m.Name,
			PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLeader: m.ID == st.Leader,
		})
	}
	sort.Slice(cs.Members, func(i, j int) bool { return cs.Members[i].Name < cs.Members[j].Name })
	return cs, nil
}

// Ready reports whether etcd serves linearizable reads now: it needs a
// leader and a quorum. It answers within OpTimeout, or ctx's deadline.
func (e *Engine) Ready(ctx context.Context) error {
	octx, done := e.op(ctx)
	defer done()
	if _, err := e.cli.Get(octx, e.recorderKey(), clientv3.WithCountOnly()); err != nil {
		return e.etcdErr(ctx, "linearizable read", err)
	}
	return nil
}
