// Package poll waits in tests for conditions that nothing announces: a
// lease that etcd expires, a process that starts listening, a page that
// a browser renders. Where a watch event or a channel can say that a
// condition holds, tests wait on that instead.
package poll

import (
	"testing"
	"time"
)

// Every is how often Until and Never check their condition: often enough
// that a test waits little past the moment it holds, seldom enough that
// polling costs a 2-core machine nothing noticeable.
const Every = 25 * time.Millisecond

// Until checks cond every Every until it holds, and fails the test (from
// the goroutine running it) when within passes first. what says what was
// awaited, for the failure message.
func Until(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(Every)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for: %s", within, what)
		}
		<-tick.C
	}
}

// Consistently checks that cond keeps holding for d: used once the
// awaited event happened, to catch a duplicate or a late effect that
// would follow it.
func Consistently(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(Every)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if !cond() {
			tb.Fatalf("no longer holds: %s", what)
		}
		<-tick.C
	}
}
