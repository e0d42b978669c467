package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/problem"
)

// Report writes err, the error cmd failed with, as baton's commands do:
// one line on stderr, "baton: …"; and with -o json also the problem as
// one JSON object on stdout, for scripts (see problemJSON). A quiet
// ExitError (a command's own exit status, under exec) writes nothing.
func Report(cmd *cobra.Command, err error, stdout, stderr io.Writer) {
	var ee *ExitError
	if errors.As(err, &ee) && ee.Quiet {
		return
	}
	fmt.Fprintln(stderr, "baton:", err)
	if cmd == nil {
		return
	}
	if f := cmd.Flags().Lookup("output"); f != nil && f.Value.String() == "json" {
		b, jerr := json.MarshalIndent(problemJSON(err), "", "  ")
		if jerr == nil {
			fmt.Fprintf(stdout, "%s\n", b)
		}
	}
}

// problemJSON is err as -o json prints it: the server's problem document
// when a node answered (type, title, status, code, detail, and field,
// holder, holders, max_token, retry_after or limit when set), or, for the CLI's own
// failures, a code of the same vocabulary ("unavailable": no node
// answered) or of the CLI's ("usage", "lock_lost", "error"). message is
// the line stderr gets, and exit_code the process's exit status.
func problemJSON(err error) map[string]any {
	m := map[string]any{"message": err.Error(), "exit_code": ExitCode(err)}
	var ce *client.Error
	if m["exit_code"] != ExitLost && errors.As(err, &ce) {
		m["status"], m["code"], m["title"], m["detail"] = ce.Status, ce.Code, ce.Title, ce.Detail
		if ce.Code != "" {
			m["type"] = problem.Type(ce.Code)
		}
		if ce.Field != "" {
			m["field"] = ce.Field
		}
		if ce.Holder != nil {
			m["holder"] = lockJSON(ce.Holder)
		}
		if len(ce.Holders) > 0 {
			m["holders"] = holdsJSON(views(ce.Holders, permitHold))
		}
		if len(ce.RWHolders) > 0 {
			m["holders"] = holdsJSON(views(ce.RWHolders, rwHold))
		}
		if len(ce.SetHolders) > 0 {
			m["holders"] = holdsJSON(views(ce.SetHolders, lockHold))
		}
		if ce.MaxToken != 0 {
			m["max_token"] = ce.MaxToken
		}
		if ce.RetryAfter > 0 {
			m["retry_after"] = int64((ce.RetryAfter + 999_999_999) / 1e9)
		}
		if ce.Limit != 0 {
			m["limit"] = ce.Limit
		}
		return m
	}
	code := "error"
	switch {
	case errors.Is(err, client.ErrUnavailable):
		code = string(problem.Unavailable)
	case errors.Is(err, client.ErrLockLost):
		code = "lock_lost"
	case isUsage(err):
		code = "usage"
	}
	m["code"], m["detail"] = code, err.Error()
	if i, ok := problem.Lookup(code); ok {
		m["type"], m["title"] = problem.Type(code), i.Title
	}
	return m
}
