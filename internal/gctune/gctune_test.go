package gctune

import (
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// restore puts the collector back as the test found it.
func restore(t *testing.T) {
	t.Helper()
	percent := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

func TestApply_SetsGOGCAndALimitWhenTheEnvironmentSetsNeither(t *testing.T) {
	restore(t)
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "AUTOMEMLIMIT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	Apply(slog.New(slog.DiscardHandler))
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Errorf("GOGC is %d, want %d", got, GCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got <= 0 || got == math.MaxInt64 {
		t.Errorf("memory limit is %d, want one below the machine's memory", got)
	}
}

func TestApply_LeavesTheOperatorsSettingsAlone(t *testing.T) {
	restore(t)
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetGCPercent(150)
	debug.SetMemoryLimit(1 << 30)
	Apply(slog.New(slog.DiscardHandler))
	if got := debug.SetGCPercent(100); got != 150 {
		t.Errorf("GOGC is %d, want the environment's 150", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit is %d, want the environment's 1GiB", got)
	}
}
