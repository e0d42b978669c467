package embedetcd_test

import (
	"context"
	"crypto/tls"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/testcerts"
	"github.com/baton-dev/baton/tests/testetcd"
)

// TestClose_UnderWatchesOfPreviousValuesDoesNotPanic: etcd serves each
// watch with a send loop that reads a changed key's previous value from
// the backend. Close must not close the backend under such a read (a nil
// bbolt transaction, and the whole process panics: etcd-io/etcd#14256).
// Over TLS etcd stops its gRPC server without waiting for its handlers,
// so the member asks it to wait (grpc.WaitForHandlers). Each round
// closes a member while writes flow to keys that watches with previous
// values follow, from a client over TLS and from the in-process one.
func TestClose_UnderWatchesOfPreviousValuesDoesNotPanic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and closes members in a loop: not in the fast tier")
	}
	ca := testcerts.NewCA(t, "etcd client CA")
	srv, me := ca.Server(t, "etcd", "127.0.0.1"), ca.Client(t, "watcher")
	for round := range 4 {
		cfg := testetcd.Config(t)
		cfg.ClientURL = "https://" + testetcd.FreeAddr(t)
		cfg.ClientTLSInfo = transport.TLSInfo{CertFile: srv.CertFile, KeyFile: srv.KeyFile, TrustedCAFile: ca.File, ClientCertAuth: true}
		m := testetcd.StartConfig(t, cfg)
		remote, err := clientv3.New(clientv3.Config{
			Endpoints: []string{strings.TrimPrefix(cfg.ClientURL, "https://")}, DialTimeout: 5 * time.Second,
			TLS: tlsConfig(t, ca, me),
		})
		if err != nil {
			t.Fatal(err)
		}
		closeUnderWatches(t, round, m, []*clientv3.Client{m.Client(), remote})
		remote.Close()
	}
}

// tlsConfig is a client's TLS configuration with pair's certificate,
// trusting ca.
func tlsConfig(t *testing.T, ca *testcerts.CA, pair testcerts.Pair) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}}
}

// closeUnderWatches closes m while each of clis watches keys with their
// previous values and writes to them.
func closeUnderWatches(t *testing.T, round int, m *embedetcd.Member, clis []*clientv3.Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 4 {
		c := clis[w%len(clis)]
		wch := c.Watch(ctx, "k/", clientv3.WithPrefix(), clientv3.WithPrevKV())
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range wch {
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				if _, err := c.Put(ctx, "k/"+strconv.Itoa(w)+"/"+strconv.Itoa(i%16), strconv.Itoa(i)); err != nil {
					return
				}
			}
		}()
	}
	// Let the writes and watches run a while, then close under them.
	for i := range 50 {
		if _, err := clis[0].Put(context.Background(), "k/main", strconv.Itoa(i)); err != nil {
			t.Fatalf("round %d: put: %v", round, err)
		}
	}
	m.Close()
	cancel()
	wg.Wait()
}
