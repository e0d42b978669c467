package trail

import (
	"context"
	"errors"
	"slices"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A call that reads the trail in several ranges reads them all at the
// revision of its first (a pin): the index folds a thing's single keys
// into a chunk under the key of the oldest (histchunks.go), so between
// two reads at different revisions an event could move from a range not
// read yet into one already read, and be missed, or the other way, and
// come twice.

// pin is the etcd revision the reads of one call see; 0 until the first.
type pin struct{ rev int64 }

// errPinCompacted says compaction took a call's pinned revision; the call
// starts over.
var errPinCompacted = errors.New("the trail's revision read was compacted")

// pinnedTries is how often a call starts over after errPinCompacted.
// Compaction runs every few minutes; a call takes milliseconds.
const pinnedTries = 3

// retryPinned runs read until it does not fail with errPinCompacted, or
// pinnedTries times.
func retryPinned[T any](read func(*pin) (T, error)) (T, error) {
	for i := 1; ; i++ {
		v, err := read(&pin{})
		if !errors.Is(err, errPinCompacted) || i == pinnedTries {
			return v, err
		}
	}
}

// readNewestKVs is readNewest's records, undecoded. etcd counts every
// key of a range, whatever its limit (docs/PERFORMANCE.md), so it reads a
// window of revisions at a time, firstWindow wide, then twice as wide
// after each that held too few: what it walks grows with what it
// returns, not with the trail. It may return more than want, up to the
// end of the last key read (src.keysFor bounds how far).
func (t *Trail) readNewestKVs(ctx context.Context, src trailSource, before int64, want int) ([]trailKV, error) {
	return retryPinned(func(p *pin) ([]trailKV, error) { return t.readNewestAt(ctx, src, p, before, want) })
}

func (t *Trail) readNewestAt(ctx context.Context, src trailSource, p *pin, before int64, want int) ([]trailKV, error) {
	var out []trailKV
	keys := 0 // keys read, for src.keysFor
	width := int64(firstWindow)
	for hi := before; len(out) < want && hi > 1; {
		lo := max(hi-width, 1) // the window: lo <= revision < hi (of a key)
		start, end := src.prefix+revKey(hi-1), src.end()
		if lo > 1 {
			end = src.prefix + revKey(lo-1)
		}
		for len(out) < want {
			r, err := t.readTrailKVs(ctx, src, p, start, end, src.keysFor(want-len(out), len(out), keys))
			if err != nil {
				return nil, err
			}
			// A chunk found in this window may hold events of newer
			// ones: those before before are its to give.
			for _, t := range r.events {
				if t.rev < before {
					out = append(out, t)
				}
			}
			keys += r.keys
			if !r.more {
				break
			}
			start = r.last + "\x00"
		}
		hi, width = lo, min(2*width, 1<<40)
	}
	return out, nil
}

// keysFor is how many keys of s to read for want more events, when read
// events came from keys keys already: a trail/ key is a revision's
// events, a trailname/ key one event or a chunk of them, as many as those
// read so far held on average (firstGroups at first), so a read goes past
// want by about one key's worth.
func (s trailSource) keysFor(want, read, keys int) int {
	if keys == 0 || read == 0 {
		return min(want, firstGroups)
	}
	return max(1, min(want, want*keys/read+1))
}

// trailRead is what one read of trail keys found.
type trailRead struct {
	events []trailKV
	keys   int    // keys read
	last   string // the last of them
	more   bool   // the range holds keys past last
}

// readTrailKVs reads the events of at most limit keys (0: all) of src in
// [start, end), newest first, at p's revision (pinning it at the first).
func (t *Trail) readTrailKVs(ctx context.Context, src trailSource, p *pin, start, end string, limit int) (trailRead, error) {
	opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(int64(limit))}
	if p.rev > 0 {
		opts = append(opts, clientv3.WithRev(p.rev))
	}
	octx, done := t.etcd.Op(ctx)
	resp, err := t.cli.Get(octx, start, opts...)
	done()
	if err != nil {
		if p.rev > 0 && errors.Is(err, rpctypes.ErrCompacted) {
			return trailRead{}, errPinCompacted
		}
		return trailRead{}, t.etcd.Err(ctx, "read history", err)
	}
	if p.rev == 0 {
		p.rev = resp.Header.Revision
	}
	r := trailRead{events: make([]trailKV, 0, len(resp.Kvs)), keys: len(resp.Kvs), more: resp.More}
	for _, kv := range resp.Kvs {
		r.events = src.events(kv, r.events)
	}
	if r.keys > 0 {
		r.last = string(resp.Kvs[r.keys-1].Key)
	}
	return r, nil
}

// readRevision reads every event of src at rev.
func (t *Trail) readRevision(ctx context.Context, src trailSource, rev int64) ([]Event, error) {
	kvs, err := t.readRevisionKVs(ctx, src, rev)
	return decodeTrail(kvs), err
}

// readRevisionKVs reads every event of src at rev: its keys named by rev
// (in trail/, more than one if two index txns shared it), or else the
// chunk that holds it, the first key older than rev's.
func (t *Trail) readRevisionKVs(ctx context.Context, src trailSource, rev int64) ([]trailKV, error) {
	start := src.prefix + revKey(rev)
	return retryPinned(func(p *pin) ([]trailKV, error) {
		r, err := t.readTrailKVs(ctx, src, p, start+"/", clientv3.GetPrefixRangeEnd(start+"/"), 0)
		if err == nil && r.keys == 0 {
			r, err = t.readTrailKVs(ctx, src, p, start, src.end(), 1)
		}
		if err != nil {
			return nil, err
		}
		// A chunk holds other revisions too.
		return slices.DeleteFunc(r.events, func(t trailKV) bool { return t.rev != rev }), nil
	})
}
