// Package report is a bench run's results: the figures of every scenario
// as the JSON file has them (Results), the ratios that hold baton against
// its floor and its peers (Compare), and the tables printed at the end of
// a run (WriteTable).
//
// It turns what was measured (package measure's Spent, and the reports of
// package load's closed loop and package contend's contention loop) into
// per-cycle, per-grant and per-hold figures; a scenario that measures
// something of its own builds its result with Per and NewCPUCores. It
// makes no load: the bench's main runs the scenarios and hands it their
// results. The peers' servers are described as packages redis and
// zookeeper describe them, under the table as in the JSON.
//
// A figure that does not apply or could not be read (a peer's raft
// entries, the CPU of a redis-server elsewhere) is 0: left out of the
// JSON and shown as "-" in the table, not a 0 to misread.
package report
