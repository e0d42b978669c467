package testcluster_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/baton-dev/baton/tests/testcluster"
)

// TestCluster_WithAnAuthFileItsOwnRequestsSendTheToken: a cluster whose
// nodes run with an auth file reads their status with its Token, while a
// request without one is refused, and reaches etcd through the socket
// that such a node serves in place of its client port.
func TestCluster_WithAnAuthFileItsOwnRequestsSendTheToken(t *testing.T) {
	const token = "cluster-admin-token-0123456789abcdef"
	authFile := filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(authFile, []byte("admin "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, testcluster.Options{Bin: bin, Nodes: 1, AuthFile: authFile, Token: token})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Leader(ctx); err != nil {
		t.Fatalf("leader with the token: %v", err)
	}
	var st struct{}
	if err := testcluster.GetJSON(ctx, c.Nodes[0].URL()+"/v1/cluster", &st); err == nil {
		t.Fatal("GET /v1/cluster without a token answered 200")
	}

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Nodes[0].EtcdURL()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Get(ctx, "any"); err != nil {
		t.Fatalf("etcd through %s: %v", c.Nodes[0].EtcdURL(), err)
	}
}
