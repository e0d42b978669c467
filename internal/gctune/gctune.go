// Package gctune sets the Go collector of a baton process for a lock
// service's load: a small live heap that allocates fast. It is called once
// by each binary that runs a node (baton serve, the bench), never by a
// library, since the settings are the whole process's.
//
// Go's default, GOGC=100, collects whenever the heap has grown by its live
// size. A node's live heap is small (etcd's index of keys, the sessions)
// and a lock cycle's garbage is a few kilobytes, so at thousands of cycles
// a second the collector runs many times a second: 16-18% of the node's
// CPU at 64 clients (docs/PERFORMANCE.md). GOGC=200 halves the number of
// collections for twice the slack. A soft memory limit keeps that slack
// from growing without bound on a node whose live heap is large (a
// million-event audit trail): near the limit the collector runs as often
// as it must, whatever GOGC says.
//
// The operator's word wins: GOGC, GOMEMLIMIT, and automemlimit's
// AUTOMEMLIMIT (a ratio, or "off") in the environment are left alone.
package gctune

import (
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// GCPercent is the GOGC a node runs with when the environment sets none.
const GCPercent = 200

// MemoryRatio is the share of the memory available to the process (its
// cgroup's limit, else the machine's) that the soft limit is set to. The
// rest is left to what the Go heap does not count: bbolt's mapped data
// file, and the page cache that serves it.
const MemoryRatio = 0.5

// Apply sets GOGC and the soft memory limit unless the environment set
// them, and logs what it chose to log.
func Apply(log *slog.Logger) {
	gogc, set := os.LookupEnv("GOGC")
	if !set {
		debug.SetGCPercent(GCPercent)
		gogc = "200 (baton's default)"
	}
	limit, err := memlimit.Set(
		memlimit.WithRatio(MemoryRatio),
		memlimit.WithProvider(memlimit.ApplyFallback(memlimit.FromCgroup, memlimit.FromSystem)),
		memlimit.WithLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		log.Warn("no soft memory limit set", "err", err)
		return
	}
	log.Debug("collector settings", "gogc", gogc, "memory_limit_bytes", limit)
}
