package etcdrecipe

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/tests/testetcd"
)

// TestContendMutex_NeverTwoHolders runs the etcd-mutex contention loop
// against a member of its own over gRPC and checks, from each hold's times
// on the loop's one clock, that no hold began before the one granted
// before it was released, and that tokens grow with every grant.
func TestContendMutex_NeverTwoHolders(t *testing.T) {
	cfg := testetcd.Config(t)
	testetcd.StartConfig(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sessions, closeAll, err := mutexClients(ctx, cfg.ClientURL, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	holds, errs, _ := contendMutex(ctx, sessions, etcdMutexPrefix+"test-one", 500*time.Millisecond)
	if n := errs.Count(); n != 0 {
		t.Fatalf("%d errors, the first: %s", n, errs.First())
	}
	// Each of the 4 workers has at least two turns.
	if len(holds) < 8 {
		t.Fatalf("%d holds, want at least 8", len(holds))
	}
	if err := checkExclusive(holds); err != nil {
		t.Error(err)
	}
	if err := closeAll(); err != nil {
		t.Errorf("close sessions: %v", err)
	}
}

func TestCheckExclusive_CatchesOverlapsAndMisorderedTokens(t *testing.T) {
	hold := func(granted, releasing time.Duration, token int64) mutexHold {
		return mutexHold{Grant: contend.Grant{Granted: granted, Released: releasing + 1, Token: token}, releasing: releasing}
	}
	for _, tc := range []struct {
		name  string
		holds []mutexHold
		want  string // in the error; "" for none
	}{
		{"one after another", []mutexHold{hold(5, 6, 12), hold(0, 2, 10), hold(3, 4, 11)}, ""},
		// The third overlaps only the first, not the one granted just
		// before it: both count.
		{"overlap", []mutexHold{hold(0, 10, 10), hold(2, 3, 11), hold(5, 6, 12)}, "2 were granted while an earlier one was held"},
		{"token goes back", []mutexHold{hold(0, 1, 10), hold(2, 3, 9)}, "1 had a token no greater"},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkExclusive(tc.holds)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("checkExclusive: %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("checkExclusive: %v, want %q", err, tc.want)
			}
		})
	}
}
