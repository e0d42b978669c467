package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-dev/baton/auth"
)

// authCmd holds the tools of the auth file, which read the file itself:
// they need no node, and answer the same on every host that has the file.
func authCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "auth", Short: "Check the auth file's credentials and rules, offline"}
	var file, need string
	check := &cobra.Command{
		Use:   "check CREDENTIAL NAME",
		Short: "Say which rule of a credential decides a name, and what it allows",
		Long: `check reads the auth file (--auth-file, env BATON_AUTH_FILE) as baton
would, finds the credential, and says which of its rules decides NAME: the
rule whose prefix is the longest prefix of NAME. NAME is a name of any kind
(a lock, an election, a semaphore, a read/write lock, a fenced resource, a
key) or a session's owner.

CREDENTIAL is a credential's name in a policy file, an ID of the line format
(cred-…, as logs show it), or - to read a token from stdin (it is never
printed): a listed token, or a JWT that the policy's jwt: section accepts
now.

Exit codes: 0 when a rule covers NAME (and gives --need, if set); 7 when
none does, or the role is weaker than --need; 1 when the file or the
credential cannot be found.`,
		Example: `  baton auth check --auth-file /etc/baton/policy.yaml payments payments.nightly-recon
  baton auth check --auth-file /etc/baton/policy.yaml --need admin payments payments.nightly-recon
  printenv BATON_AUTH_TOKEN | baton auth check --auth-file /etc/baton/auth - billing.ledger`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				file = os.Getenv("BATON_AUTH_FILE")
			}
			if file == "" {
				return usagef("--auth-file is required (or BATON_AUTH_FILE)")
			}
			var want auth.Role
			if need != "" {
				r, ok := auth.ParseRole(need)
				if !ok {
					return usagef("--need must be read, write or admin, not %q", need)
				}
				want = r
			}
			st, err := auth.Load(file)
			if err != nil {
				return err
			}
			cred, err := findCredential(st, args[0], cmd.InOrStdin())
			if err != nil {
				return err
			}
			return g.reportDecision(cred, args[1], want)
		},
	}
	check.Flags().StringVar(&file, "auth-file", "", "the auth file: ROLE TOKEN [PREFIX…] lines, or a policy file (.yaml, .yml, .json)")
	check.Flags().StringVar(&need, "need", "", "exit 7 unless the deciding rule gives this role: read, write or admin")
	g.addOutput(c, nil)
	c.AddCommand(check)
	return c
}

// findCredential finds the credential that arg names in st: a name, an
// ID, or "-" for the token on the first line of stdin.
func findCredential(st *auth.Store, arg string, stdin interface{ Read([]byte) (int, error) }) (*auth.Credential, error) {
	if arg == "-" {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		token := strings.TrimSpace(line)
		if token == "" && err != nil {
			return nil, fmt.Errorf("read a token from stdin: %w", err)
		}
		id, err := st.Bearer(token, time.Now())
		var pe *auth.ProofError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("the token on stdin is not one of the auth file's: %s", pe.Detail)
		}
		return id.Cred, err
	}
	cred, ok := st.Current().Find(arg)
	if !ok {
		return nil, fmt.Errorf("the auth file has no credential named %q (give a policy file's name, a cred-… ID, or - and a token on stdin)", arg)
	}
	return cred, nil
}

// reportDecision prints which of cred's rules decides name, and fails
// with exit code 7 when none does or it gives less than need.
func (g *globals) reportDecision(cred *auth.Credential, name string, need auth.Role) error {
	rule, ok := cred.Rules.Decide(name)
	var refused error
	switch {
	case !ok:
		refused = fmt.Errorf("%w: %q is outside the prefixes of %s (%s)", auth.ErrForbidden, name, cred.ID, strings.Join(quoted(cred.Rules.Prefixes()), ", "))
	case need != 0 && !rule.Role.Allows(need):
		refused = fmt.Errorf("%w: %s's rule %s decides %q: it does not give %s", auth.ErrForbidden, cred.ID, rule, name, need)
	}
	if g.json() {
		out := map[string]any{"credential": cred.ID, "name": name, "rule": nil, "role": "none"}
		if ok {
			out["rule"] = map[string]string{"prefix": rule.Prefix, "role": rule.Role.String()}
			out["role"] = rule.Role.String()
		}
		if err := g.printJSON(out); err != nil {
			return err
		}
	} else {
		w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(w, "credential\t%s\n", cred.ID)
		fmt.Fprintf(w, "name\t%s\n", name)
		if ok {
			fmt.Fprintf(w, "rule\t%s\n", rule)
			fmt.Fprintf(w, "may\t%s\n", mayList(rule.Role))
		} else {
			fmt.Fprintf(w, "rule\tnone: no prefix of %s covers it\n", cred.ID)
			fmt.Fprintf(w, "may\tnothing\n")
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if refused != nil {
		// The decision is the answer, printed above; with -o json it is the
		// only object on stdout.
		return &ExitError{Code: 7, Err: refused, Quiet: g.json()}
	}
	return nil
}

// mayList says what a role allows, roles nesting.
func mayList(r auth.Role) string {
	switch r {
	case auth.Read:
		return "read"
	case auth.Write:
		return "read, write"
	}
	return "read, write, admin"
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
