package chaos

import (
	"math/rand/v2"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
	"github.com/baton-dev/baton/tests/chaos/check/windowcheck"
)

// The at-least windows of the workload: windowed lock clients and the
// acquires of every semaphore but the first ask for min_hold, well below
// the TTL so that the run still moves, and windowcheck holds the trail's
// grants against them.

// window is the at-least window of one windowed acquire: from half of
// -chaos.min-hold to all of it, in whole milliseconds as the server keeps
// times; 0 when -chaos.min-hold is 0.
func window(rng *rand.Rand) time.Duration {
	if *flagMinHold <= 0 {
		return 0
	}
	half := *flagMinHold / 2
	return (half + time.Duration(rng.Int64N(int64(half)+1))).Truncate(time.Millisecond)
}

// checkWindows checks that no lock or permit was granted inside another
// hold's at-least window, and says how many windowed holds were granted.
func (r *run) checkWindows(ops []check.Op, events []check.AuditEvent) {
	asked, granted := 0, 0
	for _, op := range ops {
		if op.MinHold != "" {
			asked++
			if op.Result == check.OK {
				granted++
			}
		}
	}
	r.logf("at-least windows: %d of %d acquires that asked for one granted", granted, asked)
	if asked > 0 && granted == 0 {
		r.t.Errorf("no acquire with an at-least window succeeded: the windows checked nothing")
	}
	for _, v := range windowcheck.CheckWindows(ops, events) {
		r.t.Error("at-least windows:", v)
	}
}
