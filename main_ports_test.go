package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/tests/testetcd"
)

// TestServe_APortInUseIsOneLine: a second node started on a running one's
// ports says so in one line of its own, without etcd's JSON log line and
// stack trace before it.
func TestServe_APortInUseIsOneLine(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free := func() string { return testetcd.FreeAddr(t) }
	for _, tc := range []struct{ name, peer, client string }{
		{"peer port", taken.Addr().String(), free()},
		{"client port", free(), taken.Addr().String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "serve", "--data-dir", filepath.Join(t.TempDir(), "d"), "--http-addr", free(),
				"--peer-url", "http://"+tc.peer, "--client-url", "http://"+tc.client, "--initial-cluster", "default=http://"+tc.peer)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit %v, want 1; stderr %q", err, stderr.String())
			}
			out := strings.TrimSpace(stderr.String())
			if strings.Contains(out, "\n") || !strings.HasPrefix(out, "baton: ") || !strings.Contains(out, "address already in use") {
				t.Errorf("stderr %q, want one line of baton's saying the address is in use", out)
			}
		})
	}
}
