package lock

import (
	"context"
	"errors"
	"fmt"
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
// engine's client sees it. Leader is empty while that member knows none.
type ClusterStatus struct {
	Members  []Member
	Leader   string
	RaftTerm uint64
	Revision int64
}

// Cluster returns the members, the leader, the raft term and the current
// revision, as the member behind the client sees them: it answers even
// without a leader, which is when an operator most wants to look.
func (e *Engine) Cluster(ctx context.Context) (*ClusterStatus, error) {
	if e.core.Etcd.MemberStopped() {
		return nil, fmt.Errorf("cluster status: %w: this node's etcd member has stopped", ErrUnavailable)
	}
	octx, done := e.core.Etcd.Op(ctx)
	defer done()
	// Serializable: the member's own view, so that a node cut off from
	// the majority still tells who it thinks is there (and that it has
	// no leader) instead of answering 503.
	ml, err := e.core.Cli.MemberList(octx, clientv3.WithSerializable())
	if err != nil {
		return nil, e.core.Etcd.Err(ctx, "list members", err)
	}
	// The in-process client ignores the endpoint; a remote one asks the
	// first endpoint it was given.
	ep := ""
	if eps := e.core.Cli.Endpoints(); len(eps) > 0 {
		ep = eps[0]
	}
	st, err := e.core.Cli.Status(octx, ep)
	if err != nil {
		return nil, e.core.Etcd.Err(ctx, "member status", err)
	}
	cs := &ClusterStatus{RaftTerm: st.RaftTerm, Revision: st.Header.Revision}
	if st.Leader != 0 {
		cs.Leader = strconv.FormatUint(st.Leader, 16)
	}
	for _, m := range ml.Members {
		cs.Members = append(cs.Members, Member{
			ID: strconv.FormatUint(m.ID, 16), Name: m.Name,
			PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLeader: m.ID == st.Leader,
		})
	}
	sort.Slice(cs.Members, func(i, j int) bool { return cs.Members[i].Name < cs.Members[j].Name })
	return cs, nil
}

// Ready reports whether etcd serves linearizable reads now (it needs a
// leader and a quorum) and takes writes (ErrNoSpace while etcd's NOSPACE
// alarm is raised), and whether the engine hears etcd's watches (it wakes
// waiters and records expiries from them; the audit trail's Ready says
// the same of its own). It
// answers within OpTimeout, or ctx's deadline: a deadline that passes
// first is reported as ErrUnavailable, for that is what a probe asks.
func (e *Engine) Ready(ctx context.Context) error {
	if err := e.CheckLeader(); err != nil {
		return err
	}
	if err := e.hearing(); err != nil {
		return err
	}
	octx, done := e.core.Etcd.Op(ctx)
	defer done()
	if _, err := e.core.Cli.Get(octx, e.core.Keys.Recorder(), clientv3.WithCountOnly()); err != nil {
		// A probe that gives etcd until a deadline and hears nothing by
		// then has its answer: not ready. Only a caller that went away
		// gets its own context's error.
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("ready: %w: no answer to a linearizable read within the probe's deadline", ErrUnavailable)
		}
		return e.core.Etcd.Err(ctx, "linearizable read", err)
	}
	if e.NoSpace() {
		return fmt.Errorf("ready: %w: etcd's NOSPACE alarm is raised", ErrNoSpace)
	}
	return nil
}

// NoSpace reports whether etcd's NOSPACE alarm is raised: from the
// embedded member's own alarm store (Config.Embedded), else as
// this engine last saw it (a write refused for space, or the background
// check of the alarm list, caps.Keep).
func (e *Engine) NoSpace() bool { return e.core.Etcd.NoSpace() }
