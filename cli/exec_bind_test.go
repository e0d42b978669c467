package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
)

// TestExec_BindFailsOverAGraceAfterKill9: a baton exec --bind killed with
// SIGKILL takes its lock with it about its grace later, not its TTL
// later: the next waiter is granted then.
func TestExec_BindFailsOverAGraceAfterKill9(t *testing.T) {
	eng, addr := startServer(t)
	dir := t.TempDir()
	running := filepath.Join(dir, "running")
	cmd := exec.Command(binary(t), "exec", "--bind", "--grace", "1s", "--ttl", "30s", "job", "--",
		"sh", "-c", "touch "+running+"; exec sleep 60")
	cmd.Env = append(os.Environ(), "BATON_ADDR="+addr)
	// The job runs in a process group of its own with exec, so that the
	// kill of exec alone leaves it running, as a crash of exec would.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	poll.Until(t, 20*time.Second, "the job to run", func() bool { _, err := os.Stat(running); return err == nil })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	granted := make(chan time.Time, 1)
	go func() {
		if _, _, err := eng.Acquire(ctx, lock.AcquireRequest{Name: "job", Owner: "next", Wait: 20 * time.Second}); err != nil {
			t.Errorf("waiter: %v", err)
			return
		}
		granted <- time.Now()
	}()
	poll.Until(t, 10*time.Second, "the waiter is in line", func() bool {
		ws, err := eng.Waiters(ctx, "job")
		return err == nil && len(ws) == 1
	})
	killed := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-granted:
		took := at.Sub(killed)
		t.Logf("kill -9 of baton exec --bind --grace 1s → the next waiter's grant: %s", took)
		if took < time.Second || took > 2500*time.Millisecond {
			t.Fatalf("the waiter was granted %s after the kill, want after the 1s grace and well before the 30s TTL", took)
		}
	case <-ctx.Done():
		t.Fatal("the waiter was not granted")
	}
	if ss, _, err := eng.ListSessions(ctx, lock.SessionListOptions{Limit: 10}); err != nil || len(ss) != 0 {
		t.Fatalf("sessions left after the kill: %d, %v", len(ss), err)
	}
}
