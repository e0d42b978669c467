package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-dev/baton/tests/chaos/check/scopecheck"
)

// Every run's nodes start with an auth policy file (writePolicy) of two
// credentials. The operator's rule on every name is admin: every client
// and checker but the narrow clients acts with it, as it would without
// authentication. The narrow clients' rules are narrowRules.
const (
	operatorCredential = "operator"
	operatorToken      = "chaos-operator-token-0123456789abcdef"
	narrowCredential   = "narrow"
	narrowToken        = "chaos-narrow-token-0123456789abcdef"
)

// The narrow credential's prefixes: names under narrowPrefix it may
// write, those under sharedPrefix only read; the other clients keep to
// names under neither, bar the shared writer (scope_test.go), which
// writes those under sharedPrefix with the operator's credential.
const (
	narrowPrefix = "n."
	sharedPrefix = "shared."
)

// narrowRules are the narrow credential's rules, which the policy file
// gives it and package scopecheck holds its requests against.
var narrowRules = scopecheck.Rules{narrowPrefix: scopecheck.Write, sharedPrefix: scopecheck.Read}

// writePolicy writes the policy file into dir, readable by its owner
// only (baton warns of a wider one), and returns its path.
func writePolicy(dir string) (string, error) {
	var b strings.Builder
	b.WriteString("credentials:\n")
	fmt.Fprintf(&b, "  - name: %s\n    tokens: [%q]\n    rules: {\"\": admin}\n", operatorCredential, operatorToken)
	fmt.Fprintf(&b, "  - name: %s\n    tokens: [%q]\n    rules:\n", narrowCredential, narrowToken)
	for _, p := range narrowRules.Prefixes() {
		fmt.Fprintf(&b, "      %q: %s\n", p, narrowRules[p])
	}
	path := filepath.Join(dir, "policy.yaml")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}
