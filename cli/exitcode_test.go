package cli_test

import (
	"fmt"
	"testing"

	"github.com/baton-dev/baton/cli"
	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/problem"
	"github.com/baton-dev/baton/server"
)

// TestExitCode_EveryCodeTheServerAnswersHasItsOwn: the exit code of an
// answer is its code's, from package problem, for every code the server
// can answer (server.Codes); the caps and rate limits exit 8 (try later), not 1.
func TestExitCode_EveryCodeTheServerAnswersHasItsOwn(t *testing.T) {
	for _, code := range server.Codes() {
		info, ok := problem.Lookup(code)
		if !ok {
			t.Errorf("the server answers %q, which package problem does not list", code)
			continue
		}
		err := fmt.Errorf("call: %w", &client.Error{Status: info.Status, Code: string(code)})
		if got := cli.ExitCode(err); got != info.Exit {
			t.Errorf("%s: exit %d, want %d", code, got, info.Exit)
		}
	}
	for _, code := range []string{"too_many_waiters", "too_many_locks_in_session", "too_many_sessions", "too_many_streams", "rate_limited"} {
		if got := cli.ExitCode(&client.Error{Status: 429, Code: code}); got != cli.ExitBusy {
			t.Errorf("%s: exit %d, want %d", code, got, cli.ExitBusy)
		}
	}
	// A newer server's code: the status decides.
	for status, want := range map[int]int{503: cli.ExitUnavailable, 403: cli.ExitDenied, 429: cli.ExitBusy, 418: cli.ExitFailure} {
		if got := cli.ExitCode(&client.Error{Status: status, Code: "from_the_future"}); got != want {
			t.Errorf("unknown code with status %d: exit %d, want %d", status, got, want)
		}
	}
}
