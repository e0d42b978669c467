package redis

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/baton-dev/baton/internal/freeport"
)

func TestListensHere_FindsTheListeningProcess(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := listensHere(os.Getpid(), l.Addr().String()); err != nil {
		t.Errorf("this process listens on %s: %v", l.Addr(), err)
	}
	// The parent process (go test's, or a shell) does not listen there.
	if err := listensHere(os.Getppid(), l.Addr().String()); err == nil {
		t.Errorf("process %d does not listen on %s, but listensHere says it does", os.Getppid(), l.Addr())
	}
	closed, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	if err := listensHere(os.Getpid(), closed); err == nil {
		t.Errorf("nothing listens on %s, but listensHere says this process does", closed)
	}
}

func TestRedisServer_CaveatSaysWhatWasMeasured(t *testing.T) {
	for _, tc := range []struct {
		s    Server
		want []string
	}{
		{Server{Version: "7.0.15", AppendFsync: "everysec"}, []string{"7.0.15 (appendonly no, 0 replicas)", "before any disk has it", "not a like-for-like"}},
		{Server{Version: "7.2.4", AOFEnabled: true, AppendFsync: "everysec", Replicas: 2}, []string{"(appendonly yes, appendfsync everysec, 2 replicas)", "before any disk has it"}},
		{Server{Version: "7.2.4", AOFEnabled: true, AppendFsync: "always"}, []string{"appendfsync always", "fsyncs each write before answering", "still not a like-for-like"}},
		// CONFIG GET refused: the fsync policy is unknown, so no claim that it syncs.
		{Server{Version: "7.2.4", AOFEnabled: true}, []string{"(appendonly yes, appendfsync unknown: CONFIG GET refused, 0 replicas)", "before any disk has it unless appendfsync is always"}},
	} {
		got := tc.s.Caveat()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("caveat of %+v = %q, want it to say %q", tc.s, got, w)
			}
		}
	}
}
