package auth_test

import (
	"errors"
	"strings"
	"testing"

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
		for token, role := range want {
			c, ok := store.Check(token)
			if !ok || c.Role != role || c.ID != auth.CredentialID(token) {
				t.Fatalf("Check of a token of the file: %+v %v, want role %v", c, ok, role)
			}
			if _, ok := store.Check(token + "x"); ok && want[token+"x"] == 0 {
				t.Fatalf("Check accepted a token that is not in the file")
			}
		}
	})
}

// plainReading is the auth file's rules written out a second time, as the
// docs state them: lines of "ROLE TOKEN", blank lines and whole-line "#"
// comments; roles read, write, admin; tokens of 16 to 4096 printable ASCII
// characters without whitespace, each once; at least one credential. It
// returns the credentials, or false when the file breaks a rule. (Lines
// over 64 KiB and colliding credential IDs are left to Parse: the fuzzer
// cannot reach an ID collision, and long lines are refused either way.)
func plainReading(file string) (map[string]auth.Role, bool) {
	file = strings.TrimPrefix(file, "\xef\xbb\xbf")
	out := map[string]auth.Role{}
	for _, line := range strings.Split(file, "\n") {
		if len(line) > 64<<10 {
			return nil, false
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, false
		}
		role, ok := map[string]auth.Role{"read": auth.Read, "write": auth.Write, "admin": auth.Admin}[f[0]]
		if !ok || len(f[1]) < 16 || len(f[1]) > 4096 {
			return nil, false
		}
		for i := 0; i < len(f[1]); i++ {
			if f[1][i] <= ' ' || f[1][i] > '~' {
				return nil, false
			}
		}
		if _, dup := out[f[1]]; dup {
			return nil, false
		}
		out[f[1]] = role
	}
	return out, len(out) > 0
}
