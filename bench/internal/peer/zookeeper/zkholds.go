package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/measure"
)

// zkSemaphore is Curator's InterProcessSemaphoreV2 on the node path, of
// limit leases: a taker takes the lock recipe (InterProcessMutex) on
// path/locks, which lets one taker at a time count leases; creates a
// protected ephemeral sequential lease under path/leases; then, still
// holding the lock, reads the leases with a child watch until there are
// at most limit, waiting for the watch to fire between reads; and
// releases the lock. Giving a lease back deletes its node, which fires
// the watch of the taker waiting, if any.
//
// Two of Curator's steps have no counterpart: it creates the parents as
// containers on its first take (here zkEnsure makes them, untimed), and
// it asks the server to remove its watch once it leaves the loop, which
// go-zookeeper cannot (no removeWatches): the watch left behind fires at
// the next change of the leases, a notification instead of a request.
type zkSemaphore struct {
	conn  *zk.Conn
	path  string
	limit int
}

// zkLeasePrefix is the name of a lease's node, as in Curator.
const zkLeasePrefix = "lease-"

func (s zkSemaphore) mutex() zkMutex { return zkMutex{conn: s.conn, dir: s.path + "/locks"} }

func (s zkSemaphore) leases() string { return s.path + "/leases" }

// ensure makes the semaphore's nodes, before the clock starts.
func (s zkSemaphore) ensure() error {
	return errors.Join(zkEnsure(s.conn, s.mutex().dir), zkEnsure(s.conn, s.leases()))
}

// acquire waits until ctx ends for a lease; its seq is the lease node's
// sequence number, which orders the leases as the lock orders the takers.
// On failure no node of this taker is left.
func (s zkSemaphore) acquire(ctx context.Context) (zkHold, error) {
	m := s.mutex()
	lh, err := m.lock(ctx)
	if err != nil {
		return zkHold{}, fmt.Errorf("semaphore %s: %w", s.path, err)
	}
	h, err := s.lease(ctx)
	if uerr := m.unlock(lh); uerr != nil {
		if err == nil {
			s.release(h)
		}
		err = errors.Join(err, uerr)
	}
	if err != nil {
		return zkHold{}, fmt.Errorf("semaphore %s: %w", s.path, err)
	}
	return h, nil
}

// lease creates a lease node and waits until it is among at most limit;
// the caller holds the semaphore's lock. On failure it deletes its node.
func (s zkSemaphore) lease(ctx context.Context) (zkHold, error) {
	path, err := s.conn.CreateProtectedEphemeralSequential(s.leases()+"/"+zkLeasePrefix, nil, zk.WorldACL(zk.PermAll))
	if err != nil {
		return zkHold{}, fmt.Errorf("create lease: %w", err)
	}
	h := zkHold{path: path}
	if h.seq, err = zkSequence(path); err == nil {
		err = s.await(ctx, &h)
	}
	if err != nil {
		// The session may be gone too; then the server deleted the node.
		s.conn.Delete(path, -1)
		return zkHold{}, err
	}
	return h, nil
}

func (s zkSemaphore) await(ctx context.Context, h *zkHold) error {
	name := h.path[len(s.leases())+1:]
	for {
		children, _, ch, err := s.conn.ChildrenW(s.leases())
		if err != nil {
			return fmt.Errorf("leases: %w", err)
		}
		if !slices.Contains(children, name) {
			return fmt.Errorf("lease %s is gone: the session ended", name)
		}
		if len(children) <= s.limit {
			return nil
		}
		select {
		case ev := <-ch:
			if ev.Err != nil {
				return fmt.Errorf("watch leases: %w", ev.Err)
			}
			h.waits++
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives h back.
func (s zkSemaphore) release(h zkHold) error {
	if err := s.conn.Delete(h.path, -1); err != nil {
		return fmt.Errorf("release lease %s: %w", h.path, err)
	}
	return nil
}

// The names of Curator's InterProcessReadWriteLock's nodes, before their
// sequence numbers: every hold is a child of the lock's node, in one
// queue ordered by sequence number.
const (
	zkReadNode  = "__READ__"
	zkWriteNode = "__WRIT__"
)

// zkRWLock is Curator's InterProcessReadWriteLock on the node dir, as
// the mode's lock: the lock recipe on one queue of read and write
// children, where a writer waits for the child just ahead of it, of
// either mode (it holds only at the head), and a reader for the first
// writer ahead of it (it holds once no writer is ahead). Re-entrancy,
// which Curator keeps per thread, does not arise: a worker takes one
// hold at a time.
func zkRWLock(conn *zk.Conn, dir string, m contend.HoldMode) zkMutex {
	node := zkReadNode
	if m == contend.HoldWrite {
		node = zkWriteNode
	}
	return zkMutex{conn: conn, dir: dir, node: node, blocker: zkRWBlocker(m == contend.HoldWrite)}
}

// zkRWBlocker picks the child a read/write lock's contender of sequence
// number seq waits on, "" when none is in its way; it fails when the
// contender's own child is not among them, as Curator's does.
func zkRWBlocker(write bool) func(children []string, seq int64) (string, error) {
	return func(children []string, seq int64) (string, error) {
		block, blockSeq, mine := "", int64(-1), false
		for _, c := range children {
			writer := strings.Contains(c, zkWriteNode)
			if !writer && !strings.Contains(c, zkReadNode) {
				continue // not a contender's node
			}
			s, err := zkSequence(c)
			if err != nil {
				return "", err
			}
			switch {
			case s == seq:
				mine = true
			case s > seq:
			case write && s > blockSeq: // the closest ahead
				block, blockSeq = c, s
			case !write && writer && (blockSeq < 0 || s < blockSeq): // the first writer
				block, blockSeq = c, s
			}
		}
		if !mine {
			return "", fmt.Errorf("node %010d is gone: the session ended", seq)
		}
		return block, nil
	}
}

// Holds runs the semaphore or rwlock scenario (kind, contend.KindSemaphore
// or contend.KindRWLock) of clients for d on Curator's recipe for it, a
// session per worker, on a node of its own.
func (s *Server) Holds(ctx context.Context, kind string, clients int, d time.Duration) (contend.HoldsReport, measure.Spent, error) {
	conns, closeAll, err := zkSessions(ctx, s.Addr, clients)
	if err != nil {
		return contend.HoldsReport{}, measure.Spent{}, err
	}
	defer closeAll()
	path := zkLocksRoot + "/zookeeper-" + kind + "-one"
	cs := make([]contend.Contender, clients)
	var counter *contend.HoldCounter
	if kind == contend.KindSemaphore {
		counter = contend.NewHoldCounter(contend.SemaphoreLimit)
		if err := (zkSemaphore{conn: conns[0], path: path}).ensure(); err != nil {
			return contend.HoldsReport{}, measure.Spent{}, err
		}
		for w, conn := range conns {
			cs[w] = zkSemaphoreContender(zkSemaphore{conn: conn, path: path, limit: contend.SemaphoreLimit}).Counted(counter, 0)
		}
	} else {
		counter = contend.NewHoldCounter(0)
		if err := zkEnsure(conns[0], path); err != nil {
			return contend.HoldsReport{}, measure.Spent{}, err
		}
		for w, conn := range conns {
			cs[w] = zkRWContender(conn, path, w).Counted(counter, contend.RWHold)
		}
	}
	var rep any
	u, err := s.measured(func() error {
		var errs measure.ErrorCount
		start := time.Now()
		grants := contend.Turns(ctx, start, start.Add(d), cs, &errs)
		var rerr error
		rep, rerr = counter.Report(time.Since(start), &errs, grants)
		return rerr
	})
	if err != nil {
		return contend.HoldsReport{}, measure.Spent{}, err
	}
	return rep.(contend.HoldsReport), u, nil
}

// zkSemaphoreContender takes a lease of s each turn, waiting as baton's
// contenders do, and gives it back at once.
func zkSemaphoreContender(s zkSemaphore) contend.Contender {
	var h zkHold // the worker's lease between its take and give
	return contend.Contender{
		Take: func(ctx context.Context, _ contend.HoldMode) (int64, error) {
			wctx, cancel := context.WithTimeout(ctx, contend.Wait)
			defer cancel()
			var err error
			h, err = s.acquire(wctx)
			return h.seq, err
		},
		Give:  func(context.Context, int64) error { return s.release(h) },
		Modes: contend.Permits,
	}
}

// zkRWContender takes worker w's read or write hold of the read/write
// lock at dir each turn, drawn as baton's workers draw theirs, and
// releases it at once.
func zkRWContender(conn *zk.Conn, dir string, w int) contend.Contender {
	var m zkMutex // the hold's recipe between its take and give
	var h zkHold
	return contend.Contender{
		Take: func(ctx context.Context, mode contend.HoldMode) (int64, error) {
			wctx, cancel := context.WithTimeout(ctx, contend.Wait)
			defer cancel()
			m = zkRWLock(conn, dir, mode)
			var err error
			h, err = m.lock(wctx)
			return h.seq, err
		},
		Give:  func(context.Context, int64) error { return m.unlock(h) },
		Modes: contend.RWModes(w),
	}
}
