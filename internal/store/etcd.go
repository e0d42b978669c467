package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is what baton needs of the etcd member it is embedded with,
// beyond the in-process client, which skips etcd's interceptors and
// reaches no other member (embedetcd.Member is one).
type Member interface {
	// HasLeader reports whether the member knows a leader. Requests fail
	// fast with ErrUnavailable while it does not, instead of waiting
	// OpTimeout for a proposal or a ReadIndex that cannot complete (a
	// remote client gets the same from etcd through WithRequireLeader).
	HasLeader() bool
	// LeaderChanged returns a channel closed when the member next learns
	// of a new leader (etcd's LeaderChangedNotify; the loss of one is seen
	// through HasLeader). The calls in flight then fail with
	// ErrUnavailable at once: a proposal made under the old leader rarely
	// survives the change, and a node cut off from the majority would
	// otherwise hold each request for OpTimeout.
	LeaderChanged() <-chan struct{}
	// IsStopped reports whether the member has stopped. Local
	// (serializable) reads and etcd's Status are not sent then: on a
	// stopped member they read its closed backend and panic instead of
	// failing.
	IsStopped() bool
	// NoSpace reports whether etcd's NOSPACE alarm is raised, from the
	// member's own alarm store; without one the engine lists etcd's
	// alarms every so often (a raft round each).
	NoSpace() bool
	// Defragment defragments the member, whose in-process client cannot
	// (embedetcd.Member.Defragment says why).
	Defragment() error
	// IsLeader reports whether the member leads etcd: that node keeps the
	// audit trail's index.
	IsLeader() bool
	// MaxTxnOps is the most ops the member takes in one txn (etcd's
	// --max-txn-ops); the trail's index fills its txns up to it.
	MaxTxnOps() int
	// RangePage serves r, a range with a limit, from the member's own
	// store, linearizably unless r is serializable, reading at most the
	// limit (and one more) from its key index. etcd's Range walks the
	// index from r's key to its range end to count the keys, limit or
	// not: a page of a million keys' prefix would cost the million. The
	// answer's Count is what it holds.
	RangePage(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error)
}

// Etcd is how baton calls etcd. Every call is bounded by OpTimeout and by
// the leader's term it began in, so that a node cut off from its quorum,
// or a leader change, answers ErrUnavailable instead of hanging; and
// every failure becomes one of baton's errors (Err). The hold engine
// makes one and shares it with the parts built beside it.
//
// Leader tracking: a term ends at a leader change, so calls that a
// change leaves hanging fail at once. The embedded member says itself
// when a leader comes (followLeader); over external etcd a poll asks
// (pollLeader), for the metrics only.
type Etcd struct {
	// Cli is the client every call goes through.
	Cli *clientv3.Client
	// Member is the embedded member whose in-process client Cli is; nil
	// when Cli reaches etcd over the network.
	Member Member
	// OpTimeout bounds each call.
	OpTimeout time.Duration

	// closed ends when the owner closes: calls then fail with ErrClosed.
	closed context.Context
	// term ends at the next leader change, or with closed.
	term atomic.Pointer[context.Context]
	// noSpace is the NOSPACE alarm as last seen over external etcd: a
	// write refused for space, or the owner's poll of the alarm list.
	noSpace atomic.Bool
	// remoteLeader is whether external etcd's member last said it knew a
	// leader, and remoteTerm its raft term then.
	remoteLeader atomic.Bool
	remoteTerm   uint64
	// leaderChanged is called at every leader change seen.
	leaderChanged func()
}

// NewEtcd returns the calls over cli, which end with closed. leaderChanged,
// if not nil, is called at every leader change seen (a metric's count).
func NewEtcd(cli *clientv3.Client, member Member, opTimeout time.Duration, closed context.Context, leaderChanged func()) *Etcd {
	c := &Etcd{Cli: cli, Member: member, OpTimeout: opTimeout, closed: closed, leaderChanged: leaderChanged}
	if c.leaderChanged == nil {
		c.leaderChanged = func() {}
	}
	c.term.Store(&closed)
	return c
}

// Closed is the context that ends when the owner closes.
func (c *Etcd) Closed() context.Context { return c.closed }

// Term is the current leader's term: it ends at the next leader change.
func (c *Etcd) Term() context.Context { return *c.term.Load() }

// Op bounds one etcd call by OpTimeout and the current term, so a node
// without quorum answers instead of hanging. It also ends when the owner
// closes.
func (c *Etcd) Op(ctx context.Context) (context.Context, context.CancelFunc) {
	return c.OpIn(ctx, c.Term())
}

// OpIn is Op bound to term, which may have ended already.
func (c *Etcd) OpIn(ctx, term context.Context) (context.Context, context.CancelFunc) {
	// A remote etcd member with no leader then fails the call at once
	// (ErrNoLeader) instead of holding it until the timeout. The
	// in-process client skips etcd's interceptors, so on an embedded
	// member the header would be an allocation per call for nothing: the
	// terms do that job.
	if c.Member == nil {
		ctx = clientv3.WithRequireLeader(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, c.OpTimeout)
	stop := context.AfterFunc(term, cancel)
	return ctx, func() { stop(); cancel() }
}

// MemberStopped reports whether the embedded member has stopped
// (Member.IsStopped). Serializable reads must not be sent then: on a
// stopped member they read its closed backend and panic, where
// linearizable ones fail cleanly.
func (c *Etcd) MemberStopped() bool { return c.Member != nil && c.Member.IsStopped() }

// OwnMember reports whether Cli is the in-process client of an embedded
// member that is running. Such a member answers a write after applying
// it itself, so a local (serializable) read made after that answer sees
// the write and everything committed before it, with no ReadIndex round.
// Over external etcd the next read may go to another, lagging member.
func (c *Etcd) OwnMember() bool { return c.Member != nil && !c.Member.IsStopped() }

// Err turns an etcd failure into one of baton's. parent is the caller's
// context: if it ended, its error is returned as is, because the caller
// went away and nothing is wrong with etcd.
func (c *Etcd) Err(parent context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	if perr := parent.Err(); perr != nil {
		return fmt.Errorf("%s: %w", what, perr)
	}
	if c.closed.Err() != nil {
		return fmt.Errorf("%s: %w", what, ErrClosed)
	}
	if IsNoSpace(err) {
		c.noSpace.Store(true)
		return fmt.Errorf("%s: %w (%v)", what, ErrNoSpace, err)
	}
	if IsUnavailable(err) {
		return fmt.Errorf("%s: %w (%v)", what, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// NoSpace reports whether etcd's NOSPACE alarm is raised: from the
// embedded member's own alarm store, else as last seen (a write refused
// for space, or SetNoSpace).
func (c *Etcd) NoSpace() bool {
	if c.Member != nil {
		return c.Member.NoSpace()
	}
	return c.noSpace.Load()
}

// SetNoSpace records the NOSPACE alarm as the owner read it from etcd.
func (c *Etcd) SetNoSpace(raised bool) { c.noSpace.Store(raised) }

// CleanupCtx is for work that must finish after the caller went away, such
// as removing a queue entry: bounded, but not tied to the request.
func (c *Etcd) CleanupCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.OpTimeout)
}

// WhileStarting runs a read a part starts with until it succeeds, or
// fails with anything but ErrUnavailable, or ctx ends: a member that just
// became ready may see its cluster elect again ("leader changed"), a
// moment to wait out, not a reason for the node not to start.
func (c *Etcd) WhileStarting(ctx context.Context, log *slog.Logger, read func() error) error {
	backoff := 100 * time.Millisecond
	for {
		err := read()
		if !errors.Is(err, ErrUnavailable) {
			return err
		}
		log.Warn("etcd not serving yet; retrying", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// GetPage reads at most limit keys of [key, end), linearizably: from the
// embedded member's index, without counting the rest of the range
// (Member.RangePage), or, over a remote etcd, with a Get, whose count
// walks etcd's index to the range's end.
func (c *Etcd) GetPage(ctx context.Context, key, end string, limit int64) (*clientv3.GetResponse, error) {
	if c.Member == nil || c.Member.IsStopped() {
		return c.Cli.Get(ctx, key, clientv3.WithRange(end), clientv3.WithLimit(limit))
	}
	resp, err := c.Member.RangePage(ctx, &pb.RangeRequest{Key: []byte(key), RangeEnd: []byte(end), Limit: limit})
	if err != nil {
		return nil, err
	}
	return (*clientv3.GetResponse)(resp), nil
}
