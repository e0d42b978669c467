package report

import (
	"fmt"
	"io"

	"github.com/baton-dev/baton/bench/internal/measure"
)

// HistoryResult is the history scenario: the audit trail filled through
// the engine, then read through the HTTP API at that size.
type HistoryResult struct {
	// Events counts the audit events the fill made, FillSeconds the time
	// its cycles took.
	Events           int64   `json:"events"`
	FillSeconds      float64 `json:"fill_seconds"`
	FillEventsPerSec float64 `json:"fill_events_per_sec"`
	// FillWorkers called the engine at once, as FillOwners owners, on
	// FillNames locks (a constant of the fill: the table says it, the
	// JSON does not).
	FillWorkers int `json:"fill_workers"`
	FillOwners  int `json:"fill_owners"`
	FillNames   int `json:"-"`
	// IndexedSeconds is how long after the fill the first page could be
	// read (the bench waits for the history index to hold the fill).
	IndexedSeconds float64 `json:"indexed_seconds"`
	Cycles         int64   `json:"cycles"`
	Revoked        int64   `json:"revoked"`
	Expired        int     `json:"expired"`
	// FirstRevision and LastRevision are the lowest and highest token the
	// fill's acquires were granted; the middle and oldest pages are read
	// before revisions of that range.
	FirstRevision int64 `json:"first_revision"`
	LastRevision  int64 `json:"last_revision"`
	// Pages of 100 events: the newest, the one before the middle of the
	// fill's range, the one before its first 100 revisions, one lock's.
	Newest HistoryRead `json:"newest"`
	Middle HistoryRead `json:"middle"`
	Oldest HistoryRead `json:"oldest"`
	Lock   HistoryRead `json:"lock"`
	// Filtered reads: an owner no event has, and the rare revokes.
	Owner HistoryRead `json:"owner"`
	Type  HistoryRead `json:"type"`
	// Scoped, with the bench's -auth-rules, is a page read by a
	// credential that may read none of the events.
	Scoped *HistoryRead  `json:"scoped,omitempty"`
	RSS    HistoryRSS    `json:"rss"`
	Replay HistoryReplay `json:"replay"`
}

// HistoryRead is one kind of GET /v1/history, requested one at a time.
type HistoryRead struct {
	Path    string          `json:"path"`
	Latency measure.Latency `json:"latency"`
	// Events and NextBefore are those of the last page read: a filtered
	// read may answer a short page with a next_before to go on from.
	Events     int   `json:"events"`
	NextBefore int64 `json:"next_before,omitempty"`
	// TargetP99 is the p99 this read should stay within, in
	// microseconds; Met says whether it did.
	TargetP99 int64 `json:"target_p99_us"`
	Met       bool  `json:"met"`
	// Errors counts the measured requests that failed (Latency counts
	// those that did not).
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
}

// HistoryRSS is this process's RSS (the node's, and the bench's, small
// while it only reads) before and after Reads requests of Path.
type HistoryRSS struct {
	Path      string  `json:"path"`
	Reads     int     `json:"reads"`
	BeforeMiB float64 `json:"before_mib"`
	AfterMiB  float64 `json:"after_mib"`
	GrowthMiB float64 `json:"growth_mib"`
	// AllocatedMiB is what the process allocated during the reads, and
	// RetainedMiB the growth left once a GC collected it and gave it
	// back.
	AllocatedMiB float64 `json:"allocated_mib"`
	RetainedMiB  float64 `json:"retained_mib"`
	TargetMiB    float64 `json:"target_mib"`
	Met          bool    `json:"met"`
	Errors       int64   `json:"errors"`
	FirstError   string  `json:"first_error,omitempty"`
}

// HistoryReplay is GET /v1/events?since=0, read until 100,000 events, 10 s
// or the newest event recorded before it started (Complete).
type HistoryReplay struct {
	Events       int64   `json:"events"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_sec"`
	// FirstSeconds is the time to the first FirstEvents (1,000) events,
	// 0 if fewer came; FirstEvents, a constant, the table says and the
	// JSON does not.
	FirstSeconds float64 `json:"first_1000_seconds"`
	FirstEvents  int     `json:"-"`
	Complete     bool    `json:"complete"`
	RSSMaxMiB    float64 `json:"rss_max_mib"`
}

// Reads lists the timed reads in table order.
func (h *HistoryResult) Reads() []HistoryRead {
	reads := []HistoryRead{h.Newest, h.Middle, h.Oldest, h.Lock, h.Owner, h.Type}
	if h.Scoped != nil {
		reads = append(reads, *h.Scoped)
	}
	return reads
}

func printHistory(tw io.Writer, h *HistoryResult) {
	fmt.Fprintf(tw, "\nhistory: %d events filled through the engine in-process (%d workers as %d owners, %d locks) in %.1fs, %.0f events/s; %d revoked, %d expired; revisions %d..%d\n",
		h.Events, h.FillWorkers, h.FillOwners, h.FillNames, h.FillSeconds, h.FillEventsPerSec, h.Revoked, h.Expired, h.FirstRevision, h.LastRevision)
	fmt.Fprintf(tw, "first page %.1fs after the fill (the trail indexed)\n", h.IndexedSeconds)
	fmt.Fprintln(tw, "GET\ttimed\tp50\tp99\tmax\ttarget p99\t\tlast page\tnext_before\terrors\t")
	for _, r := range h.Reads() {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t≤ %s\t%s\t%d\t%d\t%d\t\n", r.Path, r.Latency.Count,
			ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max), ms(r.TargetP99), met(r.Met), r.Events, r.NextBefore, r.Errors)
	}
	s := h.RSS
	fmt.Fprintf(tw, "rss around %d reads of %s: %.0f MiB before, %.0f MiB after, growth %.1f MiB (target ≤ %.0f MiB: %s), %d errors\n",
		s.Reads, s.Path, s.BeforeMiB, s.AfterMiB, s.GrowthMiB, s.TargetMiB, met(s.Met), s.Errors)
	fmt.Fprintf(tw, "  the reads allocated %.0f MiB; after a GC the growth is %.1f MiB\n", s.AllocatedMiB, s.RetainedMiB)
	p := h.Replay
	complete := "stopped before the newest event"
	if p.Complete {
		complete = "through the newest event"
	}
	fmt.Fprintf(tw, "replay /v1/events?since=0: %d events in %.1fs (%.0f/s, %s), first %d in %.3fs, rss max %.0f MiB\n",
		p.Events, p.Seconds, p.EventsPerSec, complete, p.FirstEvents, p.FirstSeconds, p.RSSMaxMiB)
}

func met(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}
