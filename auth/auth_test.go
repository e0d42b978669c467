package auth_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/baton-dev/baton/auth"
)

const (
	readTok  = "read-token-0123456789"
	writeTok = "write-token-0123456789"
	adminTok = "admin-token-0123456789"
)

func TestParse_ReadsRolesCommentsAndBlankLines(t *testing.T) {
	file := "\xef\xbb\xbf# a comment\n\n  read " + readTok + "  \r\n\twrite\t" + writeTok + "\n   # indented comment\nadmin " + adminTok
	c, err := auth.Parse(strings.NewReader(file))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.Len() != 3 || c.Count(auth.Read) != 1 || c.Count(auth.Write) != 1 || c.Count(auth.Admin) != 1 {
		t.Fatalf("%d credentials (%d read, %d write, %d admin), want one of each", c.Len(), c.Count(auth.Read), c.Count(auth.Write), c.Count(auth.Admin))
	}
	st := auth.NewStore(c)
	for tok, role := range map[string]auth.Role{readTok: auth.Read, writeTok: auth.Write, adminTok: auth.Admin} {
		cred, ok := st.Check(tok)
		if !ok || cred.Role != role || cred.ID != auth.CredentialID(tok) {
			t.Errorf("Check(%s) = %+v, %v; want role %s and ID %s", role, cred, ok, role, auth.CredentialID(tok))
		}
	}
}

func TestParse_BadLinesNameTheLineAndNeverTheToken(t *testing.T) {
	secret := "s3cr3t-token-that-must-not-leak"
	for _, tc := range []struct {
		name, file string
		line       int
		reason     string
	}{
		{"unknown role", "read " + readTok + "\nroot " + secret + "\n", 2, "role"},
		{"token and role swapped", secret + " admin\n", 1, "role"},
		{"role in capitals", "ADMIN " + secret + "\n", 1, "role"},
		{"token alone", "# x\n" + secret + "\n", 2, "one field"},
		{"trailing comment", "read " + secret + " # trailing comment\n", 1, "lines of their own"},
		{"short token", "read " + readTok + "\n\nwrite short-but-" + "\n", 3, "shorter than 16"},
		{"control character", "read " + secret + "\x01\n", 1, "printable ASCII"},
		{"non-ASCII", "read " + secret + "é\n", 1, "printable ASCII"},
		{"too long", "read " + strings.Repeat("x", auth.MaxTokenLen+1) + "\n", 1, "longer than"},
		{"same token twice", "read " + secret + "\nadmin " + readTok + "\nwrite " + secret + "\n", 3, "line 1"},
		{"no credentials", "# only comments\n\n", 0, "no credentials"},
		{"empty", "", 0, "no credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := auth.Parse(strings.NewReader(tc.file))
			var pe *auth.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse: %v, want a *ParseError", err)
			}
			if pe.Line != tc.line || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q (line %d), want line %d and %q", err, pe.Line, tc.line, tc.reason)
			}
			if tc.line > 0 && !strings.Contains(err.Error(), "line ") {
				t.Errorf("error %q does not name the line", err)
			}
			for _, f := range strings.Fields(tc.file) {
				if len(f) >= 8 && strings.Contains(err.Error(), f) {
					t.Errorf("error %q quotes %q from the file", err, f)
				}
			}
		})
	}
}

func TestRole_AdminIncludesWriteIncludesRead(t *testing.T) {
	for _, tc := range []struct {
		have, need auth.Role
		ok         bool
	}{
		{auth.Read, auth.Read, true}, {auth.Read, auth.Write, false}, {auth.Read, auth.Admin, false},
		{auth.Write, auth.Read, true}, {auth.Write, auth.Write, true}, {auth.Write, auth.Admin, false},
		{auth.Admin, auth.Read, true}, {auth.Admin, auth.Write, true}, {auth.Admin, auth.Admin, true},
		{0, auth.Read, false}, {auth.Admin, 0, false},
	} {
		if got := tc.have.Allows(tc.need); got != tc.ok {
			t.Errorf("%s.Allows(%s) = %v, want %v", tc.have, tc.need, got, tc.ok)
		}
	}
	err := error(&auth.RoleError{Need: auth.Admin, Have: auth.Write})
	if !errors.Is(err, auth.ErrForbidden) || !strings.Contains(err.Error(), "needs the admin role") {
		t.Errorf("RoleError %q: want ErrForbidden naming the admin role", err)
	}
}

func TestCredentialID_IsTheDigestPrefixAndNotTheToken(t *testing.T) {
	sum := sha256.Sum256([]byte(adminTok))
	want := "cred-" + hex.EncodeToString(sum[:])[:12]
	if got := auth.CredentialID(adminTok); got != want {
		t.Errorf("CredentialID = %q, want %q", got, want)
	}
}

func TestCheck_RefusesWrongEmptyAndNearTokens(t *testing.T) {
	c, err := auth.Parse(strings.NewReader("read " + readTok + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := auth.NewStore(c)
	for _, tok := range []string{"", readTok[:len(readTok)-1], readTok + "x", strings.ToUpper(readTok), " " + readTok, strings.Repeat("a", auth.MaxTokenLen+1)} {
		if cred, ok := st.Check(tok); ok {
			t.Errorf("Check(%q) accepted as %+v", tok, cred)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestStore_ReloadSwapsAGoodFileAndKeepsTheOldOnABadOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth")
	writeFile(t, path, "read "+readTok+"\n")
	if _, err := auth.Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Load of a missing file: no error")
	}
	st, err := auth.Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	changed := st.Changed()

	writeFile(t, path, "write "+writeTok+"\nadmin "+adminTok+"\n")
	c, err := st.Reload()
	if err != nil || c.Len() != 2 {
		t.Fatalf("Reload: %v", err)
	}
	select {
	case <-changed:
	default:
		t.Error("Changed did not fire on a reload")
	}
	if _, ok := st.Check(readTok); ok {
		t.Error("the removed token still works")
	}
	if cred, ok := st.Check(writeTok); !ok || cred.Role != auth.Write {
		t.Errorf("the new write token: %+v, %v", cred, ok)
	}

	changed = st.Changed()
	writeFile(t, path, "write "+writeTok+"\nwrite "+readTok+"\nbogus line here\n")
	_, err = st.Reload()
	var pe *auth.ParseError
	if !errors.As(err, &pe) || pe.Line != 3 || pe.Path != path || !strings.Contains(err.Error(), path+": line 3") {
		t.Fatalf("Reload of a bad file: %v, want line 3 of %s named", err, path)
	}
	select {
	case <-changed:
		t.Error("Changed fired though nothing changed")
	default:
	}
	if _, ok := st.Check(readTok); ok {
		t.Error("a token of the rejected file works")
	}
	if cred, ok := st.Check(adminTok); !ok || cred.Role != auth.Admin {
		t.Errorf("the old admin token after a failed reload: %+v, %v", cred, ok)
	}
}

func TestStore_ChecksWhileReloading(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth")
	writeFile(t, path, "admin "+adminTok+"\nread "+readTok+"\n")
	st, err := auth.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				// The admin token is in every version of the file.
				if cred, ok := st.Check(adminTok); !ok || cred.Role != auth.Admin {
					t.Errorf("admin token refused mid-reload: %+v", cred)
					return
				}
			}
		})
	}
	for i := range 50 {
		content := "admin " + adminTok + "\n"
		if i%2 == 0 {
			content += "read " + readTok + "\n"
		}
		writeFile(t, path, content)
		if _, err := st.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}
