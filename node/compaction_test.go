package node_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/poll"
)

// TestNode_CompactsEveryRetentionAndServesOnAfterIt: the node compacts
// its member's history on its --etcd-compaction-retention, and baton's
// watches, which run at the head, go on through it: a cycle after the
// compaction is recorded beside the one before.
func TestNode_CompactsEveryRetentionAndServesOnAfterIt(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Trail.CompactionRetention = embedetcd.MinCompactionRetention
	n := start(t, cfg)
	base := "http://" + n.Addr()
	cycle := func(owner string) int64 {
		t.Helper()
		var l lockJSON
		if st := call(t, "POST", base+"/v1/locks/job", map[string]string{"owner": owner}, &l); st != 201 {
			t.Fatalf("acquire: %d", st)
		}
		if st := call(t, "DELETE", fmt.Sprintf("%s/v1/locks/job?token=%d", base, l.Token), nil, nil); st != 204 {
			t.Fatalf("release: %d", st)
		}
		return l.Token
	}
	acquired := cycle("before")

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{cfg.ClientURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// The node compacts every tenth of the retention to the revision it
	// sampled one retention earlier, once the audit trail has read it:
	// the "before" cycle's acquire goes after about one retention. The
	// default retention, a minute, would take two of the test's.
	poll.Until(t, 2*cfg.Trail.CompactionRetention, "a compaction past the first cycle", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := cli.Get(ctx, "any", clientv3.WithRev(acquired))
		return errors.Is(err, rpctypes.ErrCompacted)
	})

	cycle("after")
	var hist struct {
		Events []struct {
			Type  string `json:"type"`
			Owner string `json:"owner"`
		} `json:"events"`
	}
	if st := call(t, "GET", base+"/v1/history?lock=job", nil, &hist); st != 200 {
		t.Fatalf("history: %d", st)
	}
	var got []string
	for _, e := range hist.Events {
		got = append(got, e.Type+" "+e.Owner)
	}
	if want := "[released after acquired after released before acquired before]"; fmt.Sprint(got) != want {
		t.Fatalf("history after the compaction, newest first: %v, want %s", got, want)
	}
}
