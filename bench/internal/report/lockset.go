package report

import (
	"fmt"
	"io"

	"github.com/baton-dev/baton/bench/internal/measure"
)

// LockSetsResult is the lockset scenario: Clients workers, each turn
// taking SetSize distinct names of Names drawn at random (waiting) and
// releasing them at once, as one lock set (Sets) and as single locks
// taken one by one in sorted order (OneByOne).
type LockSetsResult struct {
	Clients  int        `json:"clients"`
	Names    int        `json:"names"`
	SetSize  int        `json:"set_size"`
	Sets     LockSetRun `json:"sets"`
	OneByOne LockSetRun `json:"one_by_one"`
	// SetsVsOneByOne divides the sets' cycles/s by the one-by-one
	// way's: above 1, sets are ahead.
	SetsVsOneByOne float64 `json:"sets_vs_one_by_one"`
}

// LockSetRun is one way of the lockset scenario. Its acquire latency is
// from the first acquire sent to the last name granted.
type LockSetRun struct {
	Sets              int64           `json:"sets"`
	Seconds           float64         `json:"seconds"`
	SetsPerSec        float64         `json:"sets_per_sec"`
	Acquire           measure.Latency `json:"acquire"`
	Cycle             measure.Latency `json:"cycle"`
	Checked           int64           `json:"checked"`
	CPUSecondsPer1k   float64         `json:"cpu_seconds_per_1k"`
	RaftEntriesPerSet float64         `json:"raft_entries_per_set"`
	Cores             CPUCores        `json:"cores"`
	Errors            int64           `json:"errors"`
	FirstError        string          `json:"first_error,omitempty"`
}

// firstErrors lists each way's first error, if it had any.
func (r *LockSetsResult) firstErrors() []string {
	var errs []string
	if e := r.Sets.FirstError; e != "" {
		errs = append(errs, "lockset: "+e)
	}
	if e := r.OneByOne.FirstError; e != "" {
		errs = append(errs, "lockset one by one: "+e)
	}
	return errs
}

// printLockSets prints the lockset scenario's two ways, one beside the
// other.
func printLockSets(tw io.Writer, r *LockSetsResult) {
	fmt.Fprintf(tw, "\nlockset: %d clients, each turn %d distinct names of %d drawn at random, taken (waiting) then released at once (×: sets/s ÷ one by one's)\n",
		r.Clients, r.SetSize, r.Names)
	fmt.Fprintln(tw, "way\tsets/s\t×\tacquire p50\tacquire p99\tcycle p99\tchecked\tcpu s/1k\traft/set\tcores node/gen/other\terrors\t")
	for _, w := range []struct {
		name string
		run  LockSetRun
		vs   float64
	}{{"lock set", r.Sets, r.SetsVsOneByOne}, {"one by one", r.OneByOne, 0}} {
		c := w.run
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t\n", w.name, c.SetsPerSec, ratio(w.vs),
			ms(c.Acquire.P50), ms(c.Acquire.P99), ms(c.Cycle.P99), c.Checked, figure(c.CPUSecondsPer1k, 3), figure(c.RaftEntriesPerSet, 2), c.Cores, c.Errors)
	}
	fmt.Fprintln(tw, "lock set: POST /v1/locksets, then /v1/locksets/release; one by one: the names as single locks, lower first, released in reverse")
	fmt.Fprintln(tw, "acquire: first acquire sent → every name granted; checked: names found held by their worker alone in the critical section (any other fails the run)")
}
