package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// An election is a lock kept under the election's key name (internal/store/kinds.go):
// the leader is its holder, the leadership's fencing token the hold's,
// and candidates wait in its queue, so a resignation hands leadership to
// the oldest candidate in its own txn and everything a lock has (sessions,
// lock-delay, the recorder, the trail, batching) an election has too.
// What an election adds:
//
//	term/<key>   the term of its latest leader: every grant puts it (termCmp), so a term is counted once
//	value/<key>  the value its leader proclaimed last, under the leader's lease; every end deletes it
//
// A proclaim never rewrites the holder record: the record's ModRevision is
// the token, and the node that granted a hold caches the record
// (internal/core/holdcache.go). So the leader's value is the value key's when that key
// was written during this leadership (ModRevision above the token), and
// else the value the leader campaigned with, kept in its holder record.

// MaxValueBytes bounds an election's value, as JSON.
const MaxValueBytes = 4096

// CampaignRequest asks to lead an election.
type CampaignRequest struct {
	Name      string
	Candidate string
	// Value is any JSON the leader publishes (its address, say); empty
	// means null.
	Value json.RawMessage
	// TTL, Session, Wait, LockDelay, MinHold and Metadata are as in
	// AcquireRequest: the leadership is a hold of the election's lock.
	TTL     time.Duration
	Session string
	Wait    time.Duration
	// KeepPlace is AcquireRequest.KeepPlace.
	KeepPlace bool
	LockDelay time.Duration
	MinHold   time.Duration
	Metadata  map[string]string
}

// Campaign makes the caller the leader of req.Name, waiting in line for up
// to req.Wait behind the leader and earlier candidates (first come, first
// served across every node), and returns its leadership: a *Lock whose
// Owner is the candidate, Token the fencing token, Term the election's
// count of leaders so far, and Value the leader's value. fresh is false
// when req.Session already led. It answers a *HeldError (errors.Is(err,
// ErrElectionHeld)) naming the leader when the wait runs out, and leaves
// nothing behind when ctx ends.
func (e *Engine) Campaign(ctx context.Context, req CampaignRequest) (l *Lock, fresh bool, err error) {
	if err := store.CheckName("name", req.Name); err != nil {
		return nil, false, err
	}
	if err := checkValue(req.Value); err != nil {
		return nil, false, err
	}
	key := store.KeyName(KindElection, req.Name)
	l, fresh, err = e.acquire(ctx, AcquireRequest{
		Name: key, Owner: req.Candidate, TTL: req.TTL, Session: req.Session, Wait: req.Wait, KeepPlace: req.KeepPlace,
		LockDelay: req.LockDelay, MinHold: req.MinHold, Metadata: req.Metadata,
	}, func(base core.LockKind) (core.HoldKind, error) {
		return &electionKind{LockKind: base, value: req.Value}, nil
	}, nil)
	if err != nil {
		var he *HeldError
		if errors.As(err, &he) && he.Holder != nil {
			e.readValue(ctx, key, he.Holder)
		}
		return nil, false, electionErr("campaign for", req.Name, err)
	}
	if !fresh {
		e.readValue(ctx, key, l) // the session led already, and may have proclaimed
	}
	return l, fresh, nil
}

// Leader returns who leads name, with the candidates waiting in the order
// they would lead (at most MaxListLimit of them), or ErrNoLeader.
func (e *Engine) Leader(ctx context.Context, name string) (*Lock, []Waiter, error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, nil, err
	}
	key := store.KeyName(KindElection, name)
	var t store.Txn
	lock, value := t.OnSuccess(clientv3.OpGet(e.core.Keys.Lock(key))), t.OnSuccess(clientv3.OpGet(e.core.Keys.Value(key)))
	queue := t.OnSuccess(clientv3.OpGet(e.core.Keys.Queue(key), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(MaxListLimit)))
	octx, done := e.core.Etcd.Op(ctx)
	resp, err := e.core.Cli.Txn(octx).Then(t.Then...).Commit()
	done()
	if err != nil {
		return nil, nil, e.core.Etcd.Err(ctx, "read election", err)
	}
	kvs := lock.KVs(resp)
	if len(kvs) == 0 {
		return nil, nil, fmt.Errorf("election %q: %w", name, ErrNoLeader)
	}
	l, err := e.core.DecodeLock(ctx, kvs[0], nil)
	if err != nil {
		return nil, nil, err
	}
	setValue(l, value.KVs(resp))
	return l, waitersOf(queue.KVs(resp)), nil
}

// Elections returns the elections that have a leader, sorted by name, a
// page at a time, as List does for locks.
func (e *Engine) Elections(ctx context.Context, o ListOptions) ([]*Lock, string, error) {
	ls, next, err := e.list(ctx, KindElection, o)
	if err != nil || len(ls) == 0 {
		return ls, next, err
	}
	// The page's proclaimed values: value keys live only as long as the
	// leadership that wrote them, so the page's range holds at most one
	// per leader listed.
	from := e.core.Keys.Value(store.KeyName(KindElection, ls[0].Name))
	to := e.core.Keys.Value(store.KeyName(KindElection, ls[len(ls)-1].Name)) + "\x00"
	octx, done := e.core.Etcd.Op(ctx)
	resp, err := e.core.Cli.Get(octx, from, clientv3.WithRange(to))
	done()
	if err != nil {
		return nil, "", e.core.Etcd.Err(ctx, "read election values", err)
	}
	byName := make(map[string]*mvccpb.KeyValue, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		byName[string(kv.Key)] = kv
	}
	for _, l := range ls {
		if kv, ok := byName[e.core.Keys.Value(store.KeyName(KindElection, l.Name))]; ok {
			setValue(l, []*mvccpb.KeyValue{kv})
		}
	}
	return ls, next, nil
}

// Proclaim changes the value of the leadership that token holds, keeping
// its token and term, and records it as proclaimed. It answers ErrNoLeader
// or ErrTokenMismatch when token does not lead name, and ErrNotOwner when
// ctx's caller may not act on the leadership (see Caller).
func (e *Engine) Proclaim(ctx context.Context, name string, token int64, value json.RawMessage) (*Lock, error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, err
	}
	if len(value) == 0 {
		return nil, hold.Invalid("value", "is required (null is a value)")
	}
	if err := checkValue(value); err != nil {
		return nil, err
	}
	key := store.KeyName(KindElection, name)
	l, err := e.proclaim(ctx, key, token, value)
	if err != nil {
		return nil, electionErr("proclaim in", name, err)
	}
	return l, nil
}

func (e *Engine) proclaim(ctx context.Context, key string, token int64, value json.RawMessage) (*Lock, error) {
	hr, _, err := e.core.ReadHold(ctx, key, token, false)
	if err != nil {
		return nil, err
	}
	if !hold.MayActOn(ctx, hr.Credential) {
		return nil, fmt.Errorf("the leadership with token %d was won by another credential: %w", token, ErrNotOwner)
	}
	ev := hr.Event(key, EventProclaimed, store.NowUTC())
	ev.Token, ev.Value, ev.Credential = token, value, hold.CredentialOf(ctx)
	lease, _ := store.ParseLeaseHex(hr.Lease)
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(e.core.Keys.Lock(key)), "=", token)}
	then := []clientv3.Op{
		// Under the leader's lease: an expiry takes the value with the
		// leadership, and every other end deletes it (EndTxn).
		clientv3.OpPut(e.core.Keys.Value(key), string(value), clientv3.WithLease(lease)),
		clientv3.OpPut(e.core.Keys.LockAudit(key)+hold.NewHoldID()+"/p", store.MustJSON(ev)),
	}
	var resp *clientv3.TxnResponse
	err = e.core.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		resp, err = e.core.Batch.Txn(octx, cmps, then, nil)
		return err
	})
	if err != nil {
		if store.IsLeaseNotFound(err) {
			return nil, ErrNotHeld // the lease ended, and the leadership with it
		}
		return nil, e.core.Etcd.Err(ctx, "proclaim", err)
	}
	if !resp.Succeeded {
		if _, err := e.core.HeldWith(ctx, key, token); err != nil {
			return nil, err
		}
		return nil, ErrTokenMismatch
	}
	e.core.Metrics.Recorded(EventProclaimed, 1)
	l := hold.ToLock(hr, key, token)
	l.Value = value
	if id, ok := store.ParseLeaseHex(hr.Lease); ok {
		e.core.FillLease(ctx, l, id)
	}
	return l, nil
}

// RenewLeadership extends the lease of the leadership that token holds, as
// Renew does for a lock.
func (e *Engine) RenewLeadership(ctx context.Context, name string, token int64) (*Lock, error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, err
	}
	key := store.KeyName(KindElection, name)
	l, err := e.renew(ctx, key, token)
	if err != nil {
		return nil, electionErr("renew leadership of", name, err)
	}
	e.readValue(ctx, key, l)
	return l, nil
}

// Resign ends the leadership that token holds, recorded as resigned; the
// oldest waiting candidate leads from the same txn. Errors as for Release,
// with ErrNoLeader for ErrNotHeld.
func (e *Engine) Resign(ctx context.Context, name string, token int64) error {
	if err := store.CheckName("name", name); err != nil {
		return err
	}
	if err := e.core.EndHold(ctx, store.KeyName(KindElection, name), token, EventReleased, ""); err != nil {
		return electionErr("resign from", name, err)
	}
	return nil
}

// TransferLeadership ends the leadership that token holds of election
// name in favour of the candidate to, which must be waiting in line: in
// one txn the leader resigns (recorded as resigned, "transferred to
// to") and to leads, ahead of the queue, with the resignation's
// revision as its token and the next term. It returns the new
// leadership. ErrCandidateNotWaiting when no campaign of to waits (or
// it left meanwhile); a *HeldError naming the leader, with RetryAfter,
// inside the leadership's at-least window; otherwise errors as for
// Resign.
func (e *Engine) TransferLeadership(ctx context.Context, name string, token int64, to string) (*Lock, error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, err
	}
	if err := hold.CheckOwner(to); err != nil {
		return nil, hold.Invalid("to", "%s", strings.TrimPrefix(err.Error(), "owner: "))
	}
	key := store.KeyName(KindElection, name)
	l, err := e.core.Transfer(ctx, key, token, func(wr hold.WaiterRecord) bool { return wr.Owner == to }, EventReleased, "transferred to "+to)
	var de *DelayedError
	if errors.As(err, &de) {
		leader, _, _ := e.Leader(ctx, name)
		err = &HeldError{Kind: KindElection, Holder: leader, RetryAfter: time.Until(de.Until),
			Reason: fmt.Sprintf("the leadership's at-least window lasts until %s: it is not handed on before", de.Until.Format(time.RFC3339Nano))}
	}
	if errors.Is(err, ErrCandidateNotWaiting) {
		return nil, fmt.Errorf("transfer leadership of %q to %q: %w", name, to, ErrCandidateNotWaiting)
	}
	if err != nil {
		return nil, electionErr("transfer leadership of", name, err)
	}
	return l, nil
}

// RevokeLeadership ends whoever leads name (an operator's action),
// recorded as revoked with reason, and returns the leadership it ended.
// The oldest candidate then wins as the leadership's lease would have
// expired: after its lock-delay, if it had one.
func (e *Engine) RevokeLeadership(ctx context.Context, name, reason string) (*Lock, error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, err
	}
	if len(reason) > MaxReasonLen {
		return nil, hold.Invalid("reason", "must be at most %d bytes", MaxReasonLen)
	}
	l, err := e.core.Revoke(ctx, store.KeyName(KindElection, name), reason)
	if err != nil {
		return nil, electionErr("revoke leadership of", name, err)
	}
	return l, nil
}

// readValue sets l's value to the proclaimed one, if its leader has
// proclaimed. A failed read leaves the campaign's value: the answer it
// completes has what matters (the token) already.
func (e *Engine) readValue(ctx context.Context, key string, l *Lock) {
	octx, done := e.core.Etcd.Op(ctx)
	resp, err := e.core.Cli.Get(octx, e.core.Keys.Value(key))
	done()
	if err == nil {
		setValue(l, resp.Kvs)
	}
}

// setValue sets l's value from a read of its election's value key: the
// key's, if its leader wrote it.
func setValue(l *Lock, kvs []*mvccpb.KeyValue) {
	if len(kvs) > 0 && kvs[0].ModRevision > l.Token {
		l.Value = json.RawMessage(kvs[0].Value)
	}
}

// checkValue validates an election's value (empty: none given).
func checkValue(v json.RawMessage) error {
	if len(v) == 0 {
		return nil
	}
	if !json.Valid(v) {
		return hold.Invalid("value", "must be valid JSON")
	}
	if len(v) > MaxValueBytes {
		return &LimitError{
			Err: ErrValueTooLarge, Limit: MaxValueBytes, Field: "value",
			Reason: fmt.Sprintf("value is %d bytes of JSON, more than the maximum of %d", len(v), MaxValueBytes),
		}
	}
	return nil
}

// electionErr is err, from the lock machinery under an election, as the
// election's: no leader for a lock not held, an election held for a lock
// held. what and name say which call failed.
func electionErr(what, name string, err error) error {
	var ie *InvalidError
	if errors.As(err, &ie) {
		return err
	}
	var he *HeldError
	if errors.As(err, &he) {
		he.Kind = KindElection
	}
	if errors.Is(err, ErrNotHeld) {
		return fmt.Errorf("%s %q: %w", what, name, ErrNoLeader)
	}
	return fmt.Errorf("%s %q: %w", what, name, err)
}

// ElectionNow reads who leads the election name (nil: nobody), and the
// revision it read at: where an observation of it starts (trail.Observe).
func (e *Engine) ElectionNow(ctx context.Context, name string) (*Lock, int64, error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, 0, err
	}
	key := store.KeyName(KindElection, name)
	var t store.Txn
	lock, value := t.OnSuccess(clientv3.OpGet(e.core.Keys.Lock(key))), t.OnSuccess(clientv3.OpGet(e.core.Keys.Value(key)))
	octx, done := e.core.Etcd.Op(ctx)
	resp, err := e.core.Cli.Txn(octx).Then(t.Then...).Commit()
	done()
	if err != nil {
		return nil, 0, e.core.Etcd.Err(ctx, "read election", err)
	}
	var leader *Lock
	if kvs := lock.KVs(resp); len(kvs) > 0 {
		if leader, err = e.core.DecodeLock(ctx, kvs[0], nil); err != nil {
			return nil, 0, err
		}
		setValue(leader, value.KVs(resp))
	}
	return leader, resp.Header.Revision, nil
}

// electionKind is an election's kind: a lock whose every grant counts
// the election's term. The grant's term is one more than the term it
// read, and its txn requires that term to be current (termCmp).
type electionKind struct {
	core.LockKind
	// value is the one the candidate campaigns with.
	value json.RawMessage
	// term is the election's term as last read, and termRead whether
	// it was read.
	term     int64
	termRead bool
}

// prepare reads the election's term before the first attempt, locally
// on our own member: the attempt's compare catches a stale read, and its
// else branch reads the term again.
func (k *electionKind) Prepare(ctx context.Context) error {
	if k.termRead {
		return nil
	}
	e := k.A.E
	var opts []clientv3.OpOption
	if e.Etcd.OwnMember() {
		opts = append(opts, clientv3.WithSerializable())
	}
	octx, done := e.Etcd.Op(ctx)
	resp, err := e.Cli.Get(octx, e.Keys.Term(k.A.Req.Name), opts...)
	done()
	if err != nil {
		return e.Etcd.Err(ctx, "read term", err)
	}
	k.setTerm(resp.Kvs)
	return nil
}

// setTerm takes the term from a read of the term key.
func (k *electionKind) setTerm(kvs []*mvccpb.KeyValue) {
	k.term, k.termRead = 0, true
	if len(kvs) > 0 {
		k.term, _ = strconv.ParseInt(string(kvs[0].Value), 10, 64)
	}
}

func (k *electionKind) Record(rec *store.Holder) { rec.Term, rec.Value = k.term+1, k.value }

func (k *electionKind) Cmps() []clientv3.Cmp {
	return []clientv3.Cmp{termCmp(k.A.E.Keys, k.A.Req.Name, k.term)}
}

func (k *electionKind) GrantOps(rec store.Holder) []clientv3.Op {
	return []clientv3.Op{clientv3.OpPut(k.A.E.Keys.Term(k.A.Req.Name), strconv.FormatInt(rec.Term, 10))}
}

func (k *electionKind) Reads(t *core.AcquireTxn) {
	t.Lost.Term = t.OnFailure(clientv3.OpGet(k.A.E.Keys.Term(k.A.Req.Name)))
}

// analyse takes the term its reads found first: the next attempt
// requires it, whatever this one's outcome.
func (k *electionKind) Analyse(ctx context.Context, resp *clientv3.TxnResponse, t *core.AcquireTxn, queueKey string) (core.AttemptResult, error) {
	k.setTerm(t.Lost.Term.KVs(resp))
	return k.A.AnalyseHold(ctx, resp, t, queueKey)
}

// termCmp holds while term is the election's current term. Every grant
// of an election puts its term key, with the grant's term as its value:
// an acquire requires the term it read, so two grants never count the
// same term, and a release that hands the election over knows the term
// from the holder record it ends (while a hold lasts nothing else grants
// the election, so the term key is that hold's).
func termCmp(keys store.Keys, name string, term int64) clientv3.Cmp {
	key := keys.Term(name)
	if term == 0 {
		return clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	}
	return clientv3.Compare(clientv3.Value(key), "=", strconv.FormatInt(term, 10))
}
