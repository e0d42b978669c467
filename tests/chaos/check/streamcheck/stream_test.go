package streamcheck_test

import (
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
	"github.com/baton-dev/baton/tests/chaos/check/streamcheck"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var cfg = streamcheck.Config{Start: start, KeepAlive: 500 * time.Millisecond, Slack: 250 * time.Millisecond,
	MinTTL: 2 * time.Second, ElectionTimeout: time.Second}

const ms = int64(time.Millisecond)

// scenario is one session of grace 800ms, created at 0 on n1, with a
// lock, its stream opened on n1 at 100ms (attached at 110ms) and closed
// at 1s.
func scenario() []check.Op {
	return []check.Op{
		{ID: 0, Kind: check.StreamSession, Session: "s1", Grace: "800ms", Call: 0, Return: 10 * ms, Result: check.OK},
		{ID: 1, Kind: check.StreamOpen, Session: "s1", Value: "a", Call: 100 * ms, Return: 110 * ms, Result: check.OK},
		{ID: 2, Kind: check.StreamAcquire, Session: "s1", Lock: "l1", Call: 120 * ms, Return: 130 * ms, Result: check.OK, OutToken: 7},
		{ID: 3, Kind: check.StreamClose, Session: "s1", Value: "a", Call: 1000 * ms, Return: 1000 * ms, Result: check.OK},
	}
}

// endAt is the trail's end of the session's lock at ns since the start.
func endAt(ns int64) []check.AuditEvent {
	return []check.AuditEvent{
		{Revision: 7, Time: start.Add(120 * time.Millisecond), Type: "acquired", Lock: "l1", Token: 7, Session: "s1"},
		{Revision: 9, Time: start.Add(time.Duration(ns)), Type: "session_expired", Lock: "l1", Token: 7, Session: "s1"},
	}
}

// detachAt is the server's detach record at ns since the start.
func detachAt(ns int64) []streamcheck.Record {
	return []streamcheck.Record{{Session: "s1", Revision: 8, Since: start.Add(time.Duration(ns))}}
}

func TestCheckStreams_EndWithinGraceAndKeepAlivePasses(t *testing.T) {
	rep := streamcheck.CheckStreams(scenario(), endAt(1900*ms), detachAt(1005*ms), nil, cfg)
	if len(rep.Problems) > 0 || rep.Strict != 1 || rep.ServerTimed != 1 {
		t.Fatalf("report %+v; want one strict close (its creation had a stream within the grace), no problem", rep)
	}
}

func TestCheckStreams_EndPastTheBoundFails(t *testing.T) {
	// 1s + 800ms + 500ms + 250ms = 2.55s.
	rep := streamcheck.CheckStreams(scenario(), endAt(2600*ms), detachAt(1000*ms), nil, cfg)
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "strict deadline") {
		t.Fatalf("problems %q; want one past the strict deadline", rep.Problems)
	}
}

func TestCheckStreams_ServerDetachTimesTheBound(t *testing.T) {
	// Past the client's bound (2.55s), within the server's (2.75s).
	rep := streamcheck.CheckStreams(scenario(), endAt(2700*ms), detachAt(1200*ms), nil, cfg)
	if len(rep.Problems) > 0 {
		t.Fatalf("problems %q; want none: the server detached at 1.2s", rep.Problems)
	}
	rep = streamcheck.CheckStreams(scenario(), endAt(2700*ms), nil, nil, cfg)
	if len(rep.Problems) != 1 || rep.ClientTimed != 1 {
		t.Fatalf("report %+v; want the client's cancel to time it and fail", rep)
	}
}

func TestCheckStreams_FaultGetsTheLeaseTTL(t *testing.T) {
	faults := []streamcheck.Fault{{Node: 0, From: 1500 * ms, To: 3000 * ms, What: "kill"}}
	// From the fault's end: 3s + 2s (the lease) + 1s (the election) +
	// 500ms (the lessor's tick) + 250ms.
	rep := streamcheck.CheckStreams(scenario(), endAt(5000*ms), detachAt(1000*ms), faults, cfg)
	if len(rep.Problems) > 0 || rep.Faulted != 1 {
		t.Fatalf("report %+v; want the close bounded by the lease, no problem", rep)
	}
	rep = streamcheck.CheckStreams(scenario(), endAt(7000*ms), detachAt(1000*ms), faults, cfg)
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "faulted deadline") {
		t.Fatalf("problems %q; want one past the faulted deadline", rep.Problems)
	}
}

func TestCheckStreams_ReattachWithinGraceKeepsTheSession(t *testing.T) {
	ops := append(scenario(),
		check.Op{ID: 4, Kind: check.StreamOpen, Session: "s1", Value: "b", Node: 1, Call: 1500 * ms, Return: 1510 * ms, Result: check.OK},
		check.Op{ID: 5, Kind: check.StreamClose, Session: "s1", Value: "b", Node: 1, Call: 4000 * ms, Return: 4000 * ms, Result: check.OK})
	rep := streamcheck.CheckStreams(ops, endAt(5000*ms), nil, nil, cfg)
	if len(rep.Problems) > 0 {
		t.Fatalf("problems %q; want none", rep.Problems)
	}
	// Ended while b was open, on a node without a fault.
	rep = streamcheck.CheckStreams(ops, endAt(3000*ms), nil, nil, cfg)
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "while stream b was open") {
		t.Fatalf("problems %q; want the end while b was open", rep.Problems)
	}
}

func TestCheckStreams_LateReattachThatTakesFails(t *testing.T) {
	ops := append(scenario(),
		check.Op{ID: 4, Kind: check.StreamOpen, Session: "s1", Value: "b", Node: 1, Call: 3000 * ms, Return: 3010 * ms, Result: check.OK},
		check.Op{ID: 5, Kind: check.StreamClose, Session: "s1", Value: "b", Node: 1, Call: 3100 * ms, Return: 3100 * ms, Result: check.OK})
	rep := streamcheck.CheckStreams(ops, endAt(4000*ms), detachAt(1000*ms), nil, cfg)
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "stream b attached") {
		t.Fatalf("problems %q; want the attach past the deadline", rep.Problems)
	}
}

func TestCheckStreams_EndBeforeTheGraceFails(t *testing.T) {
	rep := streamcheck.CheckStreams(scenario(), endAt(1500*ms), detachAt(1000*ms), nil, cfg)
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "before its grace had passed") {
		t.Fatalf("problems %q; want the end before the grace", rep.Problems)
	}
	faults := []streamcheck.Fault{{Node: 0, From: 200 * ms, To: 900 * ms, What: "pause"}}
	if rep := streamcheck.CheckStreams(scenario(), endAt(1500*ms), detachAt(1000*ms), faults, cfg); len(rep.Problems) > 0 {
		t.Fatalf("problems %q; want none: its node was paused, so its lease may have run out", rep.Problems)
	}
}

// A stopped trail stamps the end late; the watch's delete of the stream
// record, seen in time, is the end.
func TestCheckStreams_AStoppedTrailIsTimedByTheRecordsDelete(t *testing.T) {
	recs := append(detachAt(1000*ms), streamcheck.Record{Session: "s1", Revision: 9, Deleted: true, Seen: 1900 * ms})
	rep := streamcheck.CheckStreams(scenario(), endAt(90000*ms), recs, nil, cfg)
	if len(rep.Problems) > 0 || rep.Strict != 1 {
		t.Fatalf("report %+v; want the delete's time to bound it, no problem", rep)
	}
	late := append(detachAt(1000*ms), streamcheck.Record{Session: "s1", Revision: 9, Deleted: true, Seen: 2700 * ms})
	if rep := streamcheck.CheckStreams(scenario(), endAt(90000*ms), late, nil, cfg); len(rep.Problems) != 1 {
		t.Fatalf("problems %q; want the delete seen past the bound reported", rep.Problems)
	}
}
