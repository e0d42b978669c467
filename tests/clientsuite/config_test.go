package clientsuite_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
)

func TestDefaultConfig_ReadsTheEnvironment(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BATON_ADDR", " 10.0.0.1:8080, https://b.example:8443/baton/ ,")
	t.Setenv("BATON_TOKEN_FILE", tokenFile)
	t.Setenv("BATON_AUTH_TOKEN", " from-the-env\n")
	t.Setenv("BATON_TOKEN", "4711") // baton exec's fencing token: never a credential
	cfg := client.DefaultConfig()
	if !slices.Equal(cfg.Endpoints, []string{"10.0.0.1:8080", "https://b.example:8443/baton/"}) || cfg.TokenFile != tokenFile ||
		cfg.Token != "from-the-env" || cfg.Timeout != 10*time.Second || cfg.RetryBackoff <= 0 {
		t.Errorf("DefaultConfig() = %+v", cfg)
	}
	c, err := client.New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if got := c.Endpoints(); !slices.Equal(got, []string{"http://10.0.0.1:8080", "https://b.example:8443/baton"}) {
		t.Errorf("endpoints %v", got)
	}
	c, err = client.New("127.0.0.1:9999")
	if err != nil || !slices.Equal(c.Endpoints(), []string{"http://127.0.0.1:9999"}) {
		t.Errorf("New(endpoint) = %v, %v: the argument must win over BATON_ADDR", c.Endpoints(), err)
	}

	t.Setenv("BATON_ADDR", "")
	t.Setenv("BATON_TOKEN_FILE", "")
	t.Setenv("BATON_AUTH_TOKEN", "")
	if cfg := client.DefaultConfig(); !slices.Equal(cfg.Endpoints, []string{client.DefaultAddr}) || cfg.TokenFile != "" || cfg.Token != "" {
		t.Errorf("without the environment: %+v", cfg)
	}
}

func TestClient_SendsTheBearerTokenToTheEndpointsPath(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	seen := make(chan *http.Request, 10)
	node := newFake(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		seen <- r
		problem(w, http.StatusNotFound, "not_held", 0)
	})
	t.Setenv("BATON_TOKEN_FILE", tokenFile)
	c, err := client.New(node.URL + "/baton/")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Get(ctx, "x"); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("get: %v", err)
	}
	if _, err := c.Acquire(ctx, "x", client.AcquireOptions{}); err == nil {
		t.Fatal("acquire: no error from a 404")
	}
	for range 2 {
		r := <-seen
		if got := r.Header.Get("Authorization"); got != "Bearer s3cret" {
			t.Errorf("%s %s: Authorization %q, want the trimmed token", r.Method, r.URL.Path, got)
		}
		if r.URL.Path != "/baton/v1/locks/x" {
			t.Errorf("path %q, want under the endpoint's path", r.URL.Path)
		}
	}
}

func TestNewWithConfig_RejectsWhatCannotWork(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		cfg  client.Config
	}{
		{"no endpoints", client.Config{}},
		{"another scheme", client.Config{Endpoints: []string{"ftp://x:21"}}},
		{"no host", client.Config{Endpoints: []string{"http://"}}},
		{"a query", client.Config{Endpoints: []string{"http://x:1/?a=b"}}},
		{"a missing token file", client.Config{Endpoints: []string{"x:1"}, TokenFile: filepath.Join(t.TempDir(), "nope")}},
		{"an empty token file", client.Config{Endpoints: []string{"x:1"}, TokenFile: empty}},
		{"a negative timeout", client.Config{Endpoints: []string{"x:1"}, Timeout: -time.Second}},
	} {
		if _, err := client.NewWithConfig(tc.cfg); err == nil {
			t.Errorf("%s: no error", tc.what)
		}
	}
}
