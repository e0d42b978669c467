package zookeeper

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/bench/internal/load"
)

// needZooKeeper skips the test without Debian's zookeeper package, except
// in CI, which installs it.
func needZooKeeper(t *testing.T) {
	t.Helper()
	if err := Installed(Jar); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI (.ci/run) should have installed zookeeper: %v", err)
		}
		t.Skip(err)
	}
}

// startTestZooKeeper starts a server for the test and stops it after.
func startTestZooKeeper(t *testing.T) *Server {
	t.Helper()
	needZooKeeper(t)
	s, err := Start(context.Background(), Jar)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestZkMutex_HoldersNeverOverlap has workers, each in its own session,
// take one lock in turns: never two hold it at once, the holds come in
// the order of their sequence numbers, each wait is woken once (only its
// predecessor's release wakes it: no herd), and no node is left behind.
func TestZkMutex_HoldersNeverOverlap(t *testing.T) {
	s := startTestZooKeeper(t)
	const workers, turns = 6, 25
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conns, closeAll, err := zkSessions(ctx, s.Addr, workers)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	dir := zkLocksRoot + "/overlap"
	if err := zkEnsure(conns[0], dir); err != nil {
		t.Fatal(err)
	}
	var holders, overlaps atomic.Int32
	var mu sync.Mutex
	var seqs []int64
	var waited int
	err = load.Parallel(ctx, workers, workers*turns, func(ctx context.Context, i int) error {
		m := zkMutex{conn: conns[i%workers], dir: dir}
		h, err := m.lock(ctx)
		if err != nil {
			return err
		}
		if holders.Add(1) != 1 {
			overlaps.Add(1)
		}
		// A round trip to the server inside the critical section leaves
		// an overlap the time to show.
		ok, _, err := m.conn.Exists(h.path)
		if err == nil && !ok {
			err = errors.New("the holder's node is gone")
		}
		mu.Lock()
		seqs = append(seqs, h.seq)
		waited += h.waits
		if h.waits > 1 {
			t.Errorf("hold %d was woken %d times, want at most once", h.seq, h.waits)
		}
		mu.Unlock()
		holders.Add(-1)
		return errors.Join(err, m.unlock(h))
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d holds overlapped another", n)
	}
	if len(seqs) != workers*turns {
		t.Fatalf("%d holds, want %d", len(seqs), workers*turns)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Errorf("hold %d came after hold %d", seqs[i], seqs[i-1])
		}
	}
	t.Logf("%d holds, %d of them after waiting", len(seqs), waited)
	if children, _, err := conns[0].Children(dir); err != nil || len(children) != 0 {
		t.Errorf("children of %s after every unlock: %v (%v)", dir, children, err)
	}
}

// TestZkMutex_AWaiterThatGivesUpLeavesNoNode checks that a contender whose
// context ends deletes its node, so the next contender is not held up
// behind it.
func TestZkMutex_AWaiterThatGivesUpLeavesNoNode(t *testing.T) {
	s := startTestZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conns, closeAll, err := zkSessions(ctx, s.Addr, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	dir := zkLocksRoot + "/give-up"
	if err := zkEnsure(conns[0], dir); err != nil {
		t.Fatal(err)
	}
	holder := zkMutex{conn: conns[0], dir: dir}
	h, err := holder.lock(ctx)
	if err != nil || h.waits != 0 {
		t.Fatalf("lock a free lock: %+v, %v", h, err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer wcancel()
	if _, err := (zkMutex{conn: conns[1], dir: dir}).lock(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock a held lock until the context ends: %v, want %v", err, context.DeadlineExceeded)
	}
	if children, _, err := conns[2].Children(dir); err != nil || len(children) != 1 || dir+"/"+children[0] != h.path {
		t.Errorf("children after the waiter gave up: %v (%v), want only the holder's %s", children, err, h.path)
	}
	if err := holder.unlock(h); err != nil {
		t.Fatal(err)
	}
	next, err := (zkMutex{conn: conns[2], dir: dir}).lock(ctx)
	if err != nil || next.waits != 0 {
		t.Errorf("lock after the only holder left: %+v, %v; want it at once", next, err)
	}
}
