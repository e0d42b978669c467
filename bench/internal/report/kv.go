package report

import (
	"fmt"
	"io"

	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
)

// KVResult is the keys scenario: puts and gets of a key of each worker's
// own, back to back, by baton's HTTP API and its peers (etcd's KV over
// gRPC, ZooKeeper's setData and getData), at each client count; and how
// soon a watch hears of a put on an idle node.
type KVResult struct {
	// ValueBytes is the JSON value every put writes.
	ValueBytes int      `json:"value_bytes"`
	Rows       []KVRow  `json:"rows"`
	Watch      []KVWait `json:"watch"`
}

// KVRow is one system's puts or gets at one client count.
type KVRow struct {
	System  string `json:"system"`
	Op      string `json:"op"`
	Clients int    `json:"clients"`
	Ops     int64  `json:"ops"`
	// OpsPerSec and Latency are of whole requests, sent to answered.
	OpsPerSec       float64         `json:"ops_per_sec"`
	Latency         measure.Latency `json:"latency"`
	CPUSecondsPer1k float64         `json:"cpu_seconds_per_1k,omitempty"`
	// RaftEntriesPerOp counts the raft entries etcd committed per op:
	// below 1 when concurrent puts share entries; absent for ZooKeeper.
	RaftEntriesPerOp float64  `json:"raft_entries_per_op,omitempty"`
	Cores            CPUCores `json:"cores"`
	Errors           int64    `json:"errors"`
	FirstError       string   `json:"first_error,omitempty"`
	// BatonVs divides baton's ops/s at the same op and client count by
	// this row's (above 1 is baton ahead); absent on baton's own rows.
	BatonVs float64 `json:"baton_vs,omitempty"`
}

// NewKVRow is the row of system's op at clients: its closed loop, and
// what it spent.
func NewKVRow(system, op string, clients int, l load.LoopResult, u measure.Spent) KVRow {
	return KVRow{
		System: system, Op: op, Clients: clients, Ops: l.Cycles,
		OpsPerSec:        Per(float64(l.Cycles), l.Elapsed.Seconds()),
		Latency:          l.Latency,
		CPUSecondsPer1k:  Per(u.CPU.Seconds()*1000, float64(l.Cycles)),
		RaftEntriesPerOp: Per(u.RaftEntries, float64(l.Cycles)),
		Cores:            NewCPUCores(u), Errors: l.Errors, FirstError: l.FirstError,
	}
}

// KVWait is how soon one system's watch heard of a put: from just before
// the put was sent to the watcher's event, on an idle node.
type KVWait struct {
	System  string          `json:"system"`
	Latency measure.Latency `json:"latency"`
}

// compare sets each peer row's BatonVs.
func (k *KVResult) compare() {
	for i := range k.Rows {
		r := &k.Rows[i]
		if r.System == "baton" {
			continue
		}
		for _, b := range k.Rows {
			if b.System == "baton" && b.Op == r.Op && b.Clients == r.Clients {
				r.BatonVs = Per(b.OpsPerSec, r.OpsPerSec)
			}
		}
	}
}

func printKV(tw io.Writer, k *KVResult) {
	fmt.Fprintf(tw, "\nkeys: a key of each worker's own, %d-byte values\n", k.ValueBytes)
	fmt.Fprintln(tw, "system\top\tclients\tops/s\tp50\tp99\tbaton ×\tcpu s/1k\traft/op\terrors\t")
	for _, r := range k.Rows {
		vs := ""
		if r.BatonVs > 0 {
			vs = fmt.Sprintf("%.2f", r.BatonVs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s\t%s\t%s\t%.3f\t%.2f\t%d\t\n", r.System, r.Op, r.Clients, r.OpsPerSec,
			ms(r.Latency.P50), ms(r.Latency.P99), vs, r.CPUSecondsPer1k, r.RaftEntriesPerOp, r.Errors)
	}
	fmt.Fprintln(tw, "\nwatch: put sent to the watcher's event, on an idle node\nsystem\tp50\tp99\tmax\t")
	for _, w := range k.Watch {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", w.System, ms(w.Latency.P50), ms(w.Latency.P99), ms(w.Latency.Max))
	}
}
