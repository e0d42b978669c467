package store

import (
	"context"
	"time"
)

const (
	// notAppliedRetries is how many more times one etcd call is sent
	// after etcd refused it unapplied (NotApplied), within its request.
	notAppliedRetries = 2
	// NotAppliedPause is the longest first pause before such a retry; it
	// doubles for the next. A leader transfer ends in a few heartbeats;
	// a leader that died takes an election timeout (1 s by default) or
	// more to replace, and then the request answers ErrUnavailable.
	NotAppliedPause = 100 * time.Millisecond
)

// RetryNotApplied runs call, one etcd call, under a fresh op context (see
// Op) each time, and sends it again while etcd refuses it unapplied
// (NotApplied), at most notAppliedRetries more times. A retry goes out as
// soon as the member knows a leader in a new term, or after a pause
// (NotAppliedPause, doubling), whichever is first. All tries together
// take at most OpTimeout, as one call would: a retry never makes a
// request answer ErrUnavailable later. It returns call's last error, for
// the caller to turn into one of ours (Err).
//
// Only NotApplied errors are retried: after any other failure the call
// may have taken effect (a timeout can come after the commit), and the
// caller must be told so.
func (c *Etcd) RetryNotApplied(ctx context.Context, call func(octx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.OpTimeout)
	defer cancel()
	return c.retry(ctx, func(ctx context.Context) error {
		octx, done := c.Op(ctx)
		defer done()
		return call(octx)
	})
}

// RetryCleanup runs call, cleanup that must happen though its caller has
// gone (ctx comes from CleanupCtx, which no term ends), and runs it again
// as RetryNotApplied does. A cleanup left undone around a leader change
// would stay undone: a queue entry blocks the waiters behind it, and a
// lease that should have been revoked is renewed by every new leader
// (etcd renews every lease when it takes over). The retries are as few
// as RetryNotApplied's: cleanup runs before its request answers, and a
// member without a leader refuses every try at once.
func (c *Etcd) RetryCleanup(ctx context.Context, call func(ctx context.Context) error) error {
	return c.retry(ctx, call)
}

// retry is RetryNotApplied's and RetryCleanup's loop.
func (c *Etcd) retry(ctx context.Context, call func(ctx context.Context) error) error {
	pause := NotAppliedPause
	for try := 0; ; try++ {
		term := c.Term()
		// A call sent while the embedded member knows no leader can only
		// wait out its op context: the term it is bound to began without
		// a leader, and ends only when one is known. Not sent, it is
		// tried again once a leader is, as a refused one would be.
		err := c.CheckLeader()
		if err == nil {
			err = call(ctx)
		}
		if err == nil || try == notAppliedRetries || !NotApplied(err) || !c.awaitLeader(ctx, term, pause) {
			return err
		}
		pause *= 2
	}
}

// awaitLeader waits until a term after term begins with a leader known
// (Member.LeaderChanged, Member.HasLeader), or for d, and reports whether
// a retry is worth it: false when ctx ended or the owner closed.
func (c *Etcd) awaitLeader(ctx context.Context, term context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-term.Done():
		// A term ends when a new leader is known or when the member
		// loses its leader: only in the first case is it time already.
		if c.closed.Err() == nil && c.CheckLeader() != nil {
			select {
			case <-t.C:
			case <-ctx.Done():
			case <-c.closed.Done():
			}
		}
	case <-t.C:
	case <-ctx.Done():
	case <-c.closed.Done():
	}
	return ctx.Err() == nil && c.closed.Err() == nil
}
