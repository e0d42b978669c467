package recovery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/baton-dev/baton/internal/store"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrStillFull means Run compacted and defragmented, but the data kept
// leaves too little room under the quota to disarm the alarm; the error
// is a *StillFullError saying what holds the space.
var ErrStillFull = errors.New("the data store is still full")

// Config is what a recovery needs of the engine it runs for.
type Config struct {
	Client *clientv3.Client
	Etcd   *store.Etcd
	Keys   store.Keys
	Log    *slog.Logger
	// BackendQuota is etcd's backend quota in bytes; 0 means etcd's
	// default.
	BackendQuota int64
	// Embedded is the member the engine is embedded with, if any; it
	// defragments that member.
	Embedded store.Member
	// DialMember and OpTimeout reach the other members (lock.Config's).
	DialMember func(ctx context.Context, clientURLs []string) (*clientv3.Client, error)
	OpTimeout  time.Duration
	// CheckLeader answers ErrUnavailable when no leader is known.
	CheckLeader func() error
}

// Recovery frees etcd's space for one engine.
type Recovery struct {
	cfg  Config
	cli  *clientv3.Client
	etcd *store.Etcd
	keys store.Keys
}

// New returns the recovery cfg describes.
func New(cfg Config) *Recovery {
	return &Recovery{cfg: cfg, cli: cfg.Client, etcd: cfg.Etcd, keys: cfg.Keys}
}

// defragTimeout bounds the compaction, and the defragmentation of each
// member: a defragmentation rewrites the member's whole backend file, in
// time that grows with its size (docs/PERFORMANCE.md).
const defragTimeout = 5 * time.Minute

// headroomFraction is the part of the quota that must be free after
// defragmenting for Recover to disarm the alarm: with less, the next
// minutes of writes would raise it again.
const headroomFraction = 10

// Result is what Run did.
type Result struct {
	// CompactedRevision is the revision the history was compacted to.
	CompactedRevision int64
	// Defragmented names the members defragmented, in order.
	Defragmented []string
	// Alarms are the alarms still raised at the end ("NOSPACE on n1").
	Alarms []string
	// DBSize is the largest member's backend file after defragmenting.
	DBSize int64
	// Quota is the backend quota Recover checked DBSize against.
	Quota int64
}

// StillFullError is returned by Run when, after compacting and
// defragmenting, the data kept leaves less than a tenth of the quota
// free. It says what holds the space; the alarm stays raised.
type StillFullError struct {
	DBSize, Quota int64
	// Keys counts the keys under each of baton's prefixes, by what they
	// are: "audit events" (the history), "fenced values", "locks",
	// "sessions", "waiters".
	Keys map[string]int64
}

func (e *StillFullError) Error() string {
	kinds := make([]string, 0, len(e.Keys))
	for k := range e.Keys {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return e.Keys[kinds[i]] > e.Keys[kinds[j]] })
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", e.Keys[k], k)
	}
	return fmt.Sprintf("after compaction and defragmentation the data store still uses %d of its %d bytes; it holds %s. "+
		"The NOSPACE alarm stays raised. Shorten --history-retention for audit events, reset unused fenced values, "+
		"let unused sessions and locks expire, or restart every node with a larger --etcd-quota-bytes, then recover again",
		e.DBSize, e.Quota, strings.Join(parts, ", "))
}

// Unwrap makes errors.Is(err, ErrStillFull) hold.
func (e *StillFullError) Unwrap() error { return ErrStillFull }

// Run frees etcd's space and lifts its NOSPACE alarm, which etcd
// raises when its backend reaches the quota and which blocks every write
// until disarmed. It compacts the history to the current revision (watch
// history before it is gone; baton's audit trail is kept in keys, not in
// history), defragments every member one at a time (each member blocks
// while its backend file is rewritten, and only a defragmentation gives
// the space back to the quota, which measures the file), then disarms the
// NOSPACE alarms. It is safe to call at any time.
//
// Members are reached thus: the engine's own member through the
// in-process client (and Config.Embedded); the others through
// Config.DialMember at their client URLs (or, over external etcd, through
// the engine's client at those URLs). A member that cannot be reached fails the call with
// store.ErrUnavailable and leaves the alarm raised, since that member's full
// file would raise it again at its next write; call again once it is.
//
// When what is kept still fills more than nine tenths of the quota it
// returns a *StillFullError (ErrStillFull) and leaves the alarm raised.
func (r *Recovery) Run(ctx context.Context) (*Result, error) {
	if err := r.cfg.CheckLeader(); err != nil {
		return nil, err
	}
	quota := cmp.Or(r.cfg.BackendQuota, store.DefaultBackendQuota)
	res := &Result{Quota: quota, Defragmented: []string{}, Alarms: []string{}}

	rev, member, err := r.compactAll(ctx)
	if err != nil {
		return nil, err
	}
	res.CompactedRevision = rev
	names, err := r.defragmentAll(ctx, member, res)
	if err != nil {
		return nil, err
	}
	if res.DBSize >= quota-quota/headroomFraction {
		return nil, fmt.Errorf("recover: %w", r.stillFull(ctx, res))
	}
	if res.Alarms, err = r.disarmNoSpace(ctx, names); err != nil {
		return nil, err
	}
	r.cfg.Log.Info("recovered space", "compacted_revision", res.CompactedRevision, "defragmented", res.Defragmented,
		"db_size", res.DBSize, "quota", quota, "alarms", res.Alarms)
	return res, nil
}

// defragment defragments member m and returns its backend size after.
// local is the ID of the member behind the engine's client.
func (r *Recovery) defragment(ctx context.Context, m *pb.Member, local uint64) (int64, error) {
	cli, endpoint := r.cli, ""
	switch {
	case m.ID == local && r.cfg.Embedded != nil:
		if err := r.cfg.Embedded.Defragment(); err != nil {
			return 0, fmt.Errorf("recover: defragment member %s: %w (%v)", m.Name, store.ErrUnavailable, err)
		}
		// The in-process client's Status reaches its own member,
		// whatever the endpoint.
		octx, done := r.etcd.Op(ctx)
		defer done()
		st, err := r.cli.Status(octx, "")
		if err != nil {
			return 0, r.etcd.Err(ctx, "recover: status of member "+m.Name, err)
		}
		return st.DbSize, nil
	case m.ID == local && len(r.cli.Endpoints()) == 0:
		// An in-process client has no endpoints; its Defragment panics.
		return 0, fmt.Errorf("recover: defragment member %s: %w: the engine's in-process client needs lock.Config.Embedded", m.Name, store.ErrUnavailable)
	case len(m.ClientURLs) == 0:
		return 0, fmt.Errorf("recover: defragment member %s: %w: it has no client URL (not started yet?)", m.Name, store.ErrUnavailable)
	case r.cfg.DialMember != nil:
		dctx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
		c, err := r.cfg.DialMember(dctx, m.ClientURLs)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("recover: defragment member %s: %w: cannot reach it at %s: %v", m.Name, store.ErrUnavailable, strings.Join(m.ClientURLs, ","), err)
		}
		defer c.Close()
		cli, endpoint = c, m.ClientURLs[0]
	default:
		endpoint = m.ClientURLs[0]
	}
	dctx, cancel := context.WithTimeout(ctx, defragTimeout)
	defer cancel()
	if _, err := cli.Defragment(dctx, endpoint); err != nil {
		return 0, fmt.Errorf("recover: defragment member %s: %w (%v)", m.Name, store.ErrUnavailable, err)
	}
	st, err := cli.Status(dctx, endpoint)
	if err != nil {
		return 0, fmt.Errorf("recover: status of member %s: %w (%v)", m.Name, store.ErrUnavailable, err)
	}
	return st.DbSize, nil
}

// compactAll compacts the history to the current revision, and returns it
// with the ID of the member that answered.
func (r *Recovery) compactAll(ctx context.Context) (rev int64, member uint64, err error) {
	octx, done := r.etcd.Op(ctx)
	cur, err := r.cli.Get(octx, r.keys.Recorder(), clientv3.WithCountOnly())
	done()
	if err != nil {
		return 0, 0, r.etcd.Err(ctx, "recover: read the revision", err)
	}
	// Physical: return once the backend has dropped the old revisions,
	// so that the defragmentation below finds them gone. That takes
	// longer than OpTimeout on a large backend.
	cctx, cancel := context.WithTimeout(ctx, defragTimeout)
	_, err = r.cli.Compact(cctx, cur.Header.Revision, clientv3.WithCompactPhysical())
	cancel()
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return 0, 0, r.etcd.Err(ctx, "recover: compact", err)
	}
	return cur.Header.Revision, cur.Header.MemberId, nil
}

// defragmentAll defragments every member in name order, noting each in
// res with the largest backend size, and returns the members' names by ID.
func (r *Recovery) defragmentAll(ctx context.Context, self uint64, res *Result) (map[uint64]string, error) {
	octx, done := r.etcd.Op(ctx)
	ml, err := r.cli.MemberList(octx)
	done()
	if err != nil {
		return nil, r.etcd.Err(ctx, "recover: list members", err)
	}
	members := ml.Members
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	names := map[uint64]string{}
	for _, m := range members {
		names[m.ID] = m.Name
		size, err := r.defragment(ctx, m, self)
		if err != nil {
			return nil, err
		}
		res.Defragmented = append(res.Defragmented, m.Name)
		res.DBSize = max(res.DBSize, size)
	}
	return names, nil
}

// stillFull is the error of a Recover that left the backend too full,
// with what fills it.
func (r *Recovery) stillFull(ctx context.Context, res *Result) error {
	sf := &StillFullError{DBSize: res.DBSize, Quota: res.Quota, Keys: map[string]int64{}}
	for kind, p := range map[string]string{
		"audit events": r.keys.Trail(), "pending audit events": r.keys.Audit(), "fenced values": r.keys.Prefix + "fenced/", "locks": r.keys.Locks(),
		"sessions": r.keys.Sessions(), "waiters": r.keys.Prefix + "queue/",
	} {
		// Count-only: no keys or values come back, however many.
		octx, done := r.etcd.Op(ctx)
		resp, err := r.cli.Get(octx, p, clientv3.WithPrefix(), clientv3.WithCountOnly())
		done()
		if err != nil {
			return r.etcd.Err(ctx, "recover: count "+kind, err)
		}
		sf.Keys[kind] = resp.Count
	}
	return sf
}

// disarmNoSpace disarms every NOSPACE alarm and returns the alarms still
// raised ("NOSPACE on n1"), members named by names.
func (r *Recovery) disarmNoSpace(ctx context.Context, names map[uint64]string) ([]string, error) {
	octx, done := r.etcd.Op(ctx)
	defer done()
	alarms, err := r.cli.AlarmList(octx)
	if err != nil {
		return nil, r.etcd.Err(ctx, "recover: list alarms", err)
	}
	for _, a := range alarms.Alarms {
		if a.Alarm != pb.AlarmType_NOSPACE {
			continue
		}
		if _, err := r.cli.AlarmDisarm(octx, (*clientv3.AlarmMember)(a)); err != nil {
			return nil, r.etcd.Err(ctx, "recover: disarm the alarm", err)
		}
	}
	r.etcd.SetNoSpace(false)
	if alarms, err = r.cli.AlarmList(octx); err != nil {
		return nil, r.etcd.Err(ctx, "recover: list alarms", err)
	}
	raised := []string{}
	for _, a := range alarms.Alarms {
		name := names[a.MemberID]
		if name == "" {
			name = strconv.FormatUint(a.MemberID, 16)
		}
		raised = append(raised, a.Alarm.String()+" on "+name)
	}
	return raised, nil
}
