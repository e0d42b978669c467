package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/internal/testjwt"
	"github.com/baton-dev/baton/tests/testcluster"
	"github.com/baton-dev/baton/tests/testetcd"
)

const (
	oldTok   = "old-read-token-5a4b3c2d1e0f"
	newTok   = "new-read-token-0f1e2d3c4b5a"
	adminTok = "admin-token-9f8e7d6c5b4a"
)

// writeAtomically replaces path as an operator should (and editors do):
// a reload never reads a half-written file.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// status is what GET /v1/locks answers with token.
func status(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/v1/locks", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET /v1/locks: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestServe_SIGHUPReloadsTheAuthFile runs baton as a process with an auth
// file, replaces the file and sends SIGHUP: the new token works and the
// old is refused; then a bad file changes nothing and is reported by line;
// and no token ever reaches the log.
func TestServe_SIGHUPReloadsTheAuthFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs baton as a process")
	}
	authFile := filepath.Join(t.TempDir(), "auth")
	writeAtomically(t, authFile, "read "+oldTok+"\nadmin "+adminTok+"\n")
	c := testcluster.Start(t, testcluster.Options{Bin: bin, Nodes: 1, Args: []string{"--auth-file", authFile, "--log-level", "info"}})
	n := c.Nodes[0]
	url := n.URL()
	if st := status(t, url, oldTok); st != http.StatusOK {
		t.Fatalf("the old token before the reload: %d", st)
	}
	if st := status(t, url, newTok); st != http.StatusUnauthorized {
		t.Fatalf("the new token before the reload: %d", st)
	}

	// A stream opened with the old token ends with the reload.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	streamEnded := openEvents(ctx, t, url, oldTok)

	writeAtomically(t, authFile, "# rotated\nread "+newTok+"\nadmin "+adminTok+"\n")
	if err := syscall.Kill(n.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "accepting the new token", func() bool { return status(t, url, newTok) == http.StatusOK })
	if st := status(t, url, oldTok); st != http.StatusUnauthorized {
		t.Errorf("the old token after the reload: %d, want 401", st)
	}
	select {
	case <-streamEnded:
	case <-ctx.Done():
		t.Error("the old token's event stream outlived the reload")
	}

	// A bad file: logged with its line, and the credentials stay.
	writeAtomically(t, authFile, "read "+newTok+"\nread "+oldTok+" # a trailing comment\n")
	if err := syscall.Kill(n.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "logging the rejected file", func() bool {
		b, _ := os.ReadFile(n.LogPath)
		return strings.Contains(string(b), "auth file rejected") && strings.Contains(string(b), "line 2")
	})
	if st := status(t, url, newTok); st != http.StatusOK {
		t.Errorf("the new token after a bad reload: %d, want 200", st)
	}
	if st := status(t, url, oldTok); st != http.StatusUnauthorized {
		t.Errorf("the old token, named again in the rejected file: %d, want 401", st)
	}
	if !n.Running() {
		t.Fatal("baton exited after SIGHUP")
	}

	// The Go client with the admin token, and typed errors for the others.
	checkClientRoles(t, url)

	n.Terminate()
	<-n.Exited()
	logs, err := os.ReadFile(n.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{oldTok, newTok, adminTok} {
		if strings.Contains(string(logs), tok) {
			t.Errorf("the log contains a token:\n%s", logs)
		}
	}
	if !strings.Contains(string(logs), "credentials swapped") {
		t.Errorf("the log does not record the good reload:\n%s", logs)
	}
}

// TestServe_SIGHUPRotatesTheAuthPolicyJWKS runs baton as a process with a
// policy file that takes JWTs, rotates the JWKS file and sends SIGHUP:
// the new key's tokens work, the old key's are refused, and no token
// reaches the log.
func TestServe_SIGHUPRotatesTheAuthPolicyJWKS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs baton as a process")
	}
	dir := t.TempDir()
	policy, jwks := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "jwks.json")
	old, rotated := testjwt.NewKey(t, "old", jose.ES256), testjwt.NewKey(t, "new", jose.EdDSA)
	testjwt.WriteJWKS(t, jwks, old)
	// jwks_file relative to the policy file, which is where baton looks.
	writeAtomically(t, policy, "jwt: {jwks_file: jwks.json, audience: baton}\ncredentials:\n  - name: dashboards\n    rules: {\"\": read}\n")
	c := testcluster.Start(t, testcluster.Options{Bin: bin, Nodes: 1, Args: []string{"--auth-file", policy, "--log-level", "info"}})
	n := c.Nodes[0]
	url := n.URL()
	claims := testjwt.Claims("https://idp.test/", "baton", "dashboards", time.Hour)
	oldJWT, newJWT := old.Sign(t, claims), rotated.Sign(t, claims)
	if st := status(t, url, oldJWT); st != http.StatusOK {
		t.Fatalf("the old key's JWT before the rotation: %d", st)
	}

	testjwt.WriteJWKS(t, jwks, rotated)
	if err := syscall.Kill(n.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "accepting the new key's JWT", func() bool { return status(t, url, newJWT) == http.StatusOK })
	if st := status(t, url, oldJWT); st != http.StatusUnauthorized {
		t.Errorf("the old key's JWT after the reload: %d, want 401", st)
	}
	n.Terminate()
	<-n.Exited()
	logs, err := os.ReadFile(n.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(logs), oldJWT) || strings.Contains(string(logs), newJWT) {
		t.Errorf("the log contains a JWT:\n%s", logs)
	}
	if !strings.Contains(string(logs), "jwt_keys=1") || !strings.Contains(string(logs), "reason=\"unknown key\"") {
		t.Errorf("the log records neither the reload's keys nor the refusal's reason:\n%s", logs)
	}
}

// openEvents opens an event stream with tok and reads its first line; the
// channel it returns is closed when the stream ends.
func openEvents(ctx context.Context, t *testing.T, url, tok string) <-chan struct{} {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "retry:") {
		t.Fatalf("the stream's first line: %q, %v", line, err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	return ended
}

// checkClientRoles drives the Go client with the admin token, which may
// acquire, the new read token, which may not, and the removed token.
func checkClientRoles(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := client.NewWithConfig(client.Config{Endpoints: []string{url}, Token: adminTok})
	if err != nil {
		t.Fatal(err)
	}
	if lk, err := admin.TryAcquire(ctx, "from-the-client", client.AcquireOptions{TTL: 30 * time.Second}); err != nil {
		t.Errorf("acquire as admin: %v", err)
	} else if err := lk.Release(ctx); err != nil {
		t.Errorf("release as admin: %v", err)
	}
	reader, _ := client.NewWithConfig(client.Config{Endpoints: []string{url}, Token: newTok})
	if _, err := reader.TryAcquire(ctx, "not-for-readers", client.AcquireOptions{}); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("acquire as a reader: %v, want ErrForbidden", err)
	}
	stale, _ := client.NewWithConfig(client.Config{Endpoints: []string{url}, Token: oldTok})
	if _, _, err := stale.Locks(ctx, client.ListOptions{}); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("list with the removed token: %v, want ErrUnauthorized", err)
	}
}

// TestServe_ABadAuthFileFailsTheStartNamingTheLine: the process exits at
// once with the line at fault, before etcd starts, and without the token.
func TestServe_ABadAuthFileFailsTheStartNamingTheLine(t *testing.T) {
	dir := t.TempDir()
	authFile := filepath.Join(dir, "auth")
	writeAtomically(t, authFile, "# ok so far\nadmin "+adminTok+"\n"+oldTok+" read\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--auth-file", authFile, "--data-dir", filepath.Join(dir, "data"),
		"--http-addr", testetcd.FreeAddr(t), "--peer-url", "http://"+testetcd.FreeAddr(t), "--client-url", "http://"+testetcd.FreeAddr(t))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("baton with a bad auth file: %v, want a failed start\n%s", err, out)
	}
	if !strings.Contains(string(out), authFile+": line 3") {
		t.Errorf("the error does not name line 3 of %s:\n%s", authFile, out)
	}
	if strings.Contains(string(out), oldTok) || strings.Contains(string(out), adminTok) {
		t.Errorf("the error shows a token:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		t.Error("etcd's data dir was created: the auth file must be read first")
	}
}
