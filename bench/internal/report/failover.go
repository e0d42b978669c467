package report

import (
	"fmt"
	"io"
	"time"

	"github.com/baton-dev/baton/bench/internal/measure"
)

// FailoverResult is the failover scenario: a holder process killed with
// SIGKILL while another client waits for its lock, timed from the kill
// to the waiter's grant; once for each way a hold can outlive its
// holder.
type FailoverResult struct {
	Rows []FailoverRow `json:"rows"`
}

// FailoverRow is one way of holding: Mode "stream" (a session bound to
// the holder's stream, ending Grace after the stream breaks) or "ttl"
// (a lease of its own, ending TTL after the last renewal).
type FailoverRow struct {
	Mode   string        `json:"mode"`
	Grace  time.Duration `json:"grace,omitempty"`
	TTL    time.Duration `json:"ttl,omitempty"`
	Trials int           `json:"trials"`
	// Latency is from the holder's kill to the waiter's grant answered.
	Latency measure.Latency `json:"latency"`
}

func printFailover(tw io.Writer, f *FailoverResult) {
	fmt.Fprintln(tw, "\nfailover: kill -9 of the holder process → the next waiter's grant answered")
	fmt.Fprintln(tw, "holder\tkills\tp50\tp99\tmax\t")
	for _, r := range f.Rows {
		how := fmt.Sprintf("stream, grace %s", r.Grace)
		if r.Mode == "ttl" {
			how = fmt.Sprintf("lease, ttl %s", r.TTL)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t\n", how, r.Trials, ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max))
	}
}
