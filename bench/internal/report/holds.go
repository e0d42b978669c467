package report

import (
	"fmt"
	"io"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/measure"
)

// HoldsResult is the semaphore or the rwlock scenario, baton's or a
// peer's: Clients workers on one semaphore of Limit permits, or on one
// read/write lock, each taking a hold (waiting) and giving it back at
// once.
type HoldsResult struct {
	Clients int `json:"clients"`
	Limit   int `json:"limit,omitempty"`
	// WriteShare is the rwlock scenario's share of write turns.
	WriteShare  float64 `json:"write_share,omitempty"`
	Holds       int64   `json:"holds"`
	Seconds     float64 `json:"seconds"`
	HoldsPerSec float64 `json:"holds_per_sec"`
	// Wait is from a take sent to its answer, over every hold; Modes has
	// each mode's (one, permit, for the semaphore; read and write).
	Wait  measure.Latency `json:"wait"`
	Modes []ModeHolds     `json:"modes"`
	// MostHeld is the most holds the workers had at once: at most Limit
	// permits; with a write, only it.
	MostHeld           int64            `json:"most_held"`
	Fairness           contend.Fairness `json:"fairness"`
	CPUSecondsPer1k    float64          `json:"cpu_seconds_per_1k"`
	RaftEntriesPerHold float64          `json:"raft_entries_per_hold,omitempty"`
	Cores              CPUCores         `json:"cores"`
	Errors             int64            `json:"errors"`
	FirstError         string           `json:"first_error,omitempty"`
	// BatonVs divides baton's holds/s by this peer's (above 1 is baton
	// ahead); absent for baton's own.
	BatonVs float64 `json:"baton_vs,omitempty"`
}

// ModeHolds is one mode's holds in a HoldsResult.
type ModeHolds struct {
	Mode        string          `json:"mode"`
	Holds       int64           `json:"holds"`
	HoldsPerSec float64         `json:"holds_per_sec"`
	Wait        measure.Latency `json:"wait"`
	// BatonVs divides baton's holds/s of this mode by the peer's.
	BatonVs float64 `json:"baton_vs,omitempty"`
}

// NewHoldsResult is the result of the hold scenario kind
// (contend.KindSemaphore or contend.KindRWLock) of clients: its report,
// and what it spent.
func NewHoldsResult(kind string, clients int, r contend.HoldsReport, u measure.Spent) *HoldsResult {
	secs := r.Elapsed.Seconds()
	h := &HoldsResult{
		Clients: clients, Holds: r.Holds, Seconds: secs, HoldsPerSec: Per(float64(r.Holds), secs),
		Wait: r.Wait, MostHeld: r.MostHeld, Fairness: r.Fairness,
		CPUSecondsPer1k:    Per(u.CPU.Seconds()*1000, float64(r.Holds)),
		RaftEntriesPerHold: Per(u.RaftEntries, float64(r.Holds)),
		Cores:              NewCPUCores(u), Errors: r.Errors, FirstError: r.FirstError,
	}
	if kind == contend.KindSemaphore {
		h.Limit = contend.SemaphoreLimit
	} else {
		h.WriteShare = contend.RWWriteShare
	}
	for _, m := range r.Modes {
		h.Modes = append(h.Modes, ModeHolds{Mode: m.Mode, Holds: m.Holds, HoldsPerSec: Per(float64(m.Holds), secs), Wait: m.Wait})
	}
	return h
}

// compareTo fills in peer's ratios: baton's holds/s, in all and in each
// mode, divided by the peer's.
func (h *HoldsResult) compareTo(peer *HoldsResult) {
	peer.BatonVs = Per(h.HoldsPerSec, peer.HoldsPerSec)
	for i := range peer.Modes {
		for _, m := range h.Modes {
			if m.Mode == peer.Modes[i].Mode {
				peer.Modes[i].BatonVs = Per(m.HoldsPerSec, peer.Modes[i].HoldsPerSec)
			}
		}
	}
}

// printHolds prints baton's semaphore and rwlock figures beside the
// peers'.
func printHolds(tw io.Writer, r *Results) {
	if s := r.Semaphore; s != nil {
		fmt.Fprintf(tw, "\nsemaphore: %d clients, limit %d, take a permit (waiting) then give it back, one semaphore (×: baton's holds/s ÷ the peer's)\n", s.Clients, s.Limit)
		printHoldRows(tw, []peerHolds{{"baton", s}, {"zookeeper", r.ZooKeeperSemaphore}})
	}
	if rw := r.RWLock; rw != nil {
		fmt.Fprintf(tw, "\nrwlock: %d clients, %.0f%% of turns writes, take a hold (waiting) then release it, one read/write lock (×: baton's holds/s ÷ the peer's)\n", rw.Clients, 100*rw.WriteShare)
		printHoldRows(tw, []peerHolds{{"baton", rw}, {"zookeeper", r.ZooKeeperRWLock}})
	}
	if r.Semaphore != nil || r.RWLock != nil {
		fmt.Fprintln(tw, "wait: take sent → answered; most held: the most holds the workers had at once (checked in each run: ≤ limit, a write alone)")
		if r.ZooKeeperSemaphore != nil || r.ZooKeeperRWLock != nil {
			fmt.Fprintln(tw, "zookeeper: Curator's InterProcessSemaphoreV2 and InterProcessReadWriteLock, one session per worker; cpu and node cores are the server's")
		}
	}
}

// peerHolds is a HoldsResult, named; result is nil when it did not run.
type peerHolds struct {
	name   string
	result *HoldsResult
}

func printHoldRows(tw io.Writer, ps []peerHolds) {
	fmt.Fprintln(tw, "peer\tmode\tholds/s\t×\twait p50\twait p99\tmost held\tjudged\tin order\tcpu s/1k\traft/hold\tcores node/gen/other\terrors\t")
	for _, p := range ps {
		h := p.result
		if h == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\tall\t%.0f\t%s\t%s\t%s\t%d\t%d\t%.4f\t%s\t%s\t%s\t%d\t\n",
			p.name, h.HoldsPerSec, ratio(h.BatonVs), ms(h.Wait.P50), ms(h.Wait.P99), h.MostHeld, h.Fairness.Judged, h.Fairness.InOrder,
			figure(h.CPUSecondsPer1k, 3), figure(h.RaftEntriesPerHold, 2), h.Cores, h.Errors)
		if len(h.Modes) < 2 {
			continue
		}
		for _, m := range h.Modes {
			fmt.Fprintf(tw, "\t%s\t%.0f\t%s\t%s\t%s\t\t\t\t\t\t\t\t\n", m.Mode, m.HoldsPerSec, ratio(m.BatonVs), ms(m.Wait.P50), ms(m.Wait.P99))
		}
	}
}
