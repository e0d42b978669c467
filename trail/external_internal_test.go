package trail

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// startDebianEtcd starts Debian's etcd (package etcd-server) alone on
// free loopback ports, compacting by itself with the periodic
// retention given, and returns a client of it. Without the binary the
// test is skipped, except in CI, which installs it.
func startDebianEtcd(t *testing.T, retention string) *clientv3.Client {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("etcd is not installed, and CI (.ci/run) should have (package etcd-server): %v", err)
		}
		t.Skip("etcd is not installed (apt-get install etcd-server)")
	}
	dir := t.TempDir()
	client, peer := "http://"+testetcd.FreeAddr(t), "http://"+testetcd.FreeAddr(t)
	logPath := filepath.Join(dir, "etcd.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(bin, "--name", "ext", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "ext="+peer,
		"--auto-compaction-mode", "periodic", "--auto-compaction-retention", retention)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("etcd's log:\n%s", out)
		}
	})
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	poll.Until(t, 30*time.Second, "etcd answers", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Get(ctx, "x")
		return err == nil
	})
	return cli
}

// Over an external etcd that compacts by itself, a trail that stopped
// reading for longer than etcd's retention loses the derived events of
// the compacted revisions, and says so: one gap event, with the
// revisions and the reason, then the events after it as before.
func TestExternalEtcd_ACompactionThatOutranTheTrailIsRecordedAsAGap(t *testing.T) {
	cli := startDebianEtcd(t, "2s")
	e := startBeside(t, cli, lock.DefaultConfig(), DefaultConfig())
	defer e.Close()
	kept := holdCycles(t, e, 1, 50*time.Millisecond)
	allHistory(t, e) // indexed before the trail stops
	haltIndex(t, e)
	lost := holdCycles(t, e, 2, 100*time.Millisecond)
	mark, err := cli.Put(context.Background(), "mark", "")
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, time.Minute, "etcd compacts past the stopped trail", func() bool { return compactedPast(t, cli, mark.Header.Revision) })
	evs := resumeAfterAGap(t, e, lost, mark.Header.Revision, "an external etcd's own compaction")
	for name, tokens := range kept {
		for _, tok := range tokens {
			n := 0
			for _, ev := range evs {
				if ev.Name == name && ev.Token == tok {
					n++
				}
			}
			if n != 2 {
				t.Errorf("%s's hold %d, before the trail stopped: %d events, want its acquire and release", name, tok, n)
			}
		}
	}
}

// An idle trail over an external etcd that compacts by itself loses
// nothing, so when the index starts again after its bookkeeping writes
// were compacted, it records no gap, and every event is there once.
func TestExternalEtcd_AnIdleTrailCompactedPastItsBookkeepingRecordsNoGap(t *testing.T) {
	cli := startDebianEtcd(t, "1s")
	cfg := lock.DefaultConfig()
	cfg.RecorderSaveEvery = 50 * time.Millisecond
	e := startBeside(t, cli, cfg, DefaultConfig())
	tokens := holdCycles(t, e, 2, 100*time.Millisecond)
	before := allHistory(t, e)
	// Idle: the index's cursor passes every change but its own write,
	// and the recorder saves its cursor once after the last change (the
	// released holds' leases end a moment after their releases). The
	// head then stays put for a second, and etcd compacts up to it.
	var head int64
	still := 0
	poll.Until(t, 20*time.Second, "the cursors pass every change, and nothing more is written", func() bool {
		e.trail.hist.mu.Lock()
		last, indexed := e.trail.hist.lastChange, e.trail.hist.meta.Indexed
		e.trail.hist.mu.Unlock()
		resp, err := cli.Get(context.Background(), "x")
		if err != nil {
			t.Fatal(err)
		}
		if resp.Header.Revision != head || !(last > 0 && last <= indexed && savedCursorOf(t, cli, e) >= last) {
			head, still = resp.Header.Revision, 0
			return false
		}
		still++
		return still*int(poll.Every) >= int(time.Second)
	})
	poll.Until(t, time.Minute, "etcd compacts the idle cluster to its head", func() bool { return compactedPast(t, cli, head-1) })
	// The index starts again from its cursor, and reads on past the
	// compaction (a progress notification tells it it has).
	haltIndex(t, e)
	e.trail.hist.halted.Store(false)
	poll.Until(t, 30*time.Second, "the index reads past the compaction", func() bool {
		e.trail.hist.mu.Lock()
		defer e.trail.hist.mu.Unlock()
		return e.trail.hist.serving.Load() && e.trail.hist.read >= head
	})
	after := allHistory(t, e)
	for _, ev := range after {
		if ev.Type == EventGap {
			t.Fatalf("a gap after idling, where nothing was lost: %+v (head %d)", ev, head)
		}
	}
	n := 0
	for _, ts := range tokens {
		n += 2 * len(ts)
	}
	if len(before) != n || len(after) != n {
		t.Errorf("%d events before the index started again and %d after, want %d", len(before), len(after), n)
	}
}

// savedCursorOf is the recorder's cursor as saved in etcd, 0 for none.
func savedCursorOf(t *testing.T, cli *clientv3.Client, e *engine) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), e.keys.Recorder())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	return n
}
