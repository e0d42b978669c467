package auth_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/baton-dev/baton/auth"
)

// FuzzParse feeds arbitrary auth files to Parse. Whatever the file, a
// refusal never quotes a field of it long enough to be a token (any field
// may be one, whatever its place on the line), and an
// accepted file holds exactly the credentials a plain reading of the rules
// finds, each of which Check then recognises with its role.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"admin 6b1f0e5c8a0d4b27a9c3e1f2d4b6a8c0\n",
		"# ops\nadmin 6b1f0e5c8a0d4b27a9c3e1f2d4b6a8c0\n\nwrite 0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f\nread  1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d\n",
		"\xef\xbb\xbfread 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d\r\n",
		"6b1f0e5c8a0d4b27a9c3e1f2d4b6a8c0 admin\n",
		"write short\n",
		"write 0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f # a comment\n",
		"read 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d\nread 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d\n",
		"Admin 6b1f0e5c8a0d4b27a9c3e1f2d4b6a8c0\n",
		"write 0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f team-a. shared.\n",
		"write 0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f a. a.\n",
		"",
		"#only a comment\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, file string) {
		creds, err := auth.Parse(strings.NewReader(file))
		want, wantOK := plainReading(file)
		if err != nil {
			var pe *auth.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error %T %v, want a *ParseError", err, err)
			}
			for _, field := range strings.Fields(file) {
				if len(field) >= auth.MinTokenLen && strings.Contains(err.Error(), field) {
					t.Fatalf("the error %q quotes a field of the file, %q", err, field)
				}
			}
			if wantOK {
				t.Fatalf("Parse refused a file the rules accept: %v", err)
			}
			return
		}
		if !wantOK {
			t.Fatalf("Parse accepted a file the rules refuse")
		}
		if creds.Len() != len(want) {
			t.Fatalf("Parse found %d credentials, the rules %d", creds.Len(), len(want))
		}
		store := auth.NewStore(creds)
		for token, cred := range want {
			c, ok := store.Check(token)
			if !ok || c.Role != cred.role || c.ID != auth.CredentialID(token) {
				t.Fatalf("Check of a token of the file: %+v %v, want role %v", c, ok, cred.role)
			}
			if got := c.Rules.Prefixes(); !slices.Equal(got, cred.prefixes) {
				t.Fatalf("the token's prefixes are %q, the rules say %q", got, cred.prefixes)
			}
			if _, ok := store.Check(token + "x"); ok && want[token+"x"].role == 0 {
				t.Fatalf("Check accepted a token that is not in the file")
			}
		}
	})
}

// plainReading is the auth file's rules written out a second time, as the
// docs state them: lines of "ROLE TOKEN [PREFIX…]", blank lines and
// whole-line "#" comments; roles read, write, admin; tokens of 16 to 4096
// printable ASCII characters without whitespace, each once; prefixes of
// printable ASCII of at most 512 bytes, none starting with "#", none
// twice on a line; at least one credential. It returns the credentials
// (a line without prefixes has the empty prefix), or false when the file
// breaks a rule. (Lines over 64 KiB and colliding credential IDs are left
// to Parse: the fuzzer cannot reach an ID collision, and long lines are
// refused either way.)
func plainReading(file string) (map[string]plainCred, bool) {
	file = strings.TrimPrefix(file, "\xef\xbb\xbf")
	out := map[string]plainCred{}
	for _, line := range strings.Split(file, "\n") {
		if len(line) > 64<<10 {
			return nil, false
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, false
		}
		role, ok := map[string]auth.Role{"read": auth.Read, "write": auth.Write, "admin": auth.Admin}[f[0]]
		if !ok || len(f[1]) < 16 || len(f[1]) > 4096 || !printable(f[1]) {
			return nil, false
		}
		prefixes := slices.Clone(f[2:])
		for i, p := range prefixes {
			if strings.HasPrefix(p, "#") || len(p) > 512 || !printable(p) || slices.Contains(prefixes[:i], p) {
				return nil, false
			}
		}
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
		slices.Sort(prefixes)
		if _, dup := out[f[1]]; dup {
			return nil, false
		}
		out[f[1]] = plainCred{role, prefixes}
	}
	return out, len(out) > 0
}

type plainCred struct {
	role     auth.Role
	prefixes []string
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// FuzzParsePolicy feeds arbitrary policy files to ParsePolicy. Whatever
// the file, it returns a *ParseError or credentials, never panics, and a
// refusal never quotes a token the file lists; an accepted file's every
// listed token is recognised as its credential's.
func FuzzParsePolicy(f *testing.F) {
	for _, seed := range []string{
		policyYAML,
		"credentials:\n  - name: a\n    tokens: [\"aaaaaaaaaaaaaaaaaaaa\"]\n    rules: {\"\": read}\n",
		"credentials:\n  - name: a\n    tokens: [\"aaaaaaaaaaaaaaaaaaaa\"]\n    rules: {\"x\": root}\n",
		"credentials:\n  - name: a\n    tokens: [\"aaaaaaaaaaaaaaaaaaaa\", \"aaaaaaaaaaaaaaaaaaaa\"]\n    rules: {\"\": read}\n",
		"credentials:\n  - name: a\n    tokens: [\"aaaaaaaaaaaaaaaaaaaa\"]\n    rules: {\"\": read}\n    quotas: {holds: -1}\n",
		`{"credentials":[{"name":"j","tokens":["bbbbbbbbbbbbbbbbbbbb"],"rules":{"j.":"admin"}}]}`,
		"credentials:\n  - name: a\n    certificates: [\"cn:a\", \"uri:spiffe://x/a\"]\n    rules: {\"\": read}\n",
		"credentials:\n  - name: a\n    certificates: [\"a\"]\n    rules: {\"\": read}\n",
		"jwt: {jwks_file: /nonexistent}\ncredentials:\n  - name: a\n    rules: {\"\": read}\n",
		"credentials: [",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		creds, err := auth.ParsePolicy(strings.NewReader(doc))
		tokens := listedTokens(doc)
		if err != nil {
			var pe *auth.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("ParsePolicy error %T %v, want a *ParseError", err, err)
			}
			for tok, name := range tokens {
				if len(tok) >= auth.MinTokenLen && strings.Contains(err.Error(), tok) && !strings.Contains(name, tok) {
					t.Fatalf("the error %q quotes a token of the file", err)
				}
			}
			return
		}
		st := auth.NewStore(creds)
		for tok, name := range tokens {
			if c, ok := st.Check(tok); !ok || c.ID != name {
				t.Fatalf("Check of a listed token: %+v %v, want credential %q", c, ok, name)
			}
		}
	})
}

// listedTokens are the tokens a policy document lists, by credential
// name, read without ParsePolicy: nil when the document does not decode.
func listedTokens(doc string) map[string]string {
	var d struct {
		Credentials []struct {
			Name   string   `json:"name"`
			Tokens []string `json:"tokens"`
		} `json:"credentials"`
	}
	if yaml.Unmarshal([]byte(doc), &d) != nil {
		return nil
	}
	out := map[string]string{}
	for _, c := range d.Credentials {
		for _, tok := range c.Tokens {
			out[tok] = c.Name
		}
	}
	return out
}

// FuzzDecide holds Rules.Decide to a plain reading: of the rules whose
// prefix starts the name, the longest decides; none, none.
func FuzzDecide(f *testing.F) {
	f.Add("a.,b.,a.b.", "a.b.c")
	f.Add(",x", "y")
	f.Add("team-a.", "team-b.x")
	f.Fuzz(func(t *testing.T, prefixes, name string) {
		var rules []auth.Rule
		for i, p := range strings.Split(prefixes, ",") {
			if slices.ContainsFunc(rules, func(r auth.Rule) bool { return r.Prefix == p }) {
				continue
			}
			rules = append(rules, auth.Rule{Prefix: p, Role: auth.Role(i%3 + 1)})
		}
		rs, err := auth.NewRules(rules)
		if err != nil {
			return // a prefix that is not printable ASCII
		}
		var want *auth.Rule
		for i, r := range rules {
			if strings.HasPrefix(name, r.Prefix) && (want == nil || len(r.Prefix) > len(want.Prefix)) {
				want = &rules[i]
			}
		}
		got, ok := rs.Decide(name)
		if ok != (want != nil) || ok && got != *want {
			t.Fatalf("Decide(%q) = %v, %v; the longest prefix is %v", name, got, ok, want)
		}
	})
}
