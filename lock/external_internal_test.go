package lock

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/internal/testetcd"
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
	e, err := New(context.Background(), cli, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
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
	e.hist.halted.Store(false)
	after, _, err := e.Acquire(context.Background(), AcquireRequest{Name: "after", Owner: "o", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	evs := allHistory(t, e)
	g := theGap(t, evs)
	firstLost := int64(math.MaxInt64)
	for _, ts := range lost {
		firstLost = min(firstLost, ts[0])
	}
	if g.FromRevision > firstLost || g.ToRevision < mark.Header.Revision || g.Revision != g.ToRevision ||
		!strings.Contains(g.Reason, "an external etcd's own compaction") {
		t.Errorf("gap %+v; want one from at most revision %d to at least %d, recorded at its end, saying etcd compacted them", g, firstLost, mark.Header.Revision)
	}
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
	if newest := evs[len(evs)-1]; newest.Token != after.Token || newest.Type != EventAcquired {
		t.Errorf("the newest event is %+v, want the acquire after the gap (token %d)", newest, after.Token)
	}
}
