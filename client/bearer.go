package client

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// TokenFileMaxAge is how long the client sends a token read from
// Config.TokenFile before it reads the file again. A node's 401 makes it
// read the file at once.
const TokenFileMaxAge = time.Minute

// bearer is the client's bearer token: Config.Token as given, or the
// content of Config.TokenFile. The tokens kept in files (a Kubernetes
// projected service-account token, a JWT that a sidecar renews) are
// replaced in place before they expire, so the file is read again after
// TokenFileMaxAge, and when a node refuses the token: a client that read
// it once would be refused from its expiry on.
type bearer struct {
	file string // "" for a token given as is
	mu   sync.Mutex
	tok  string    // guarded by mu when file is set
	read time.Time // when file was last read; guarded by mu
}

// newBearer returns token, or file's content when token is empty. It
// fails when file cannot be read or holds nothing.
func newBearer(token, file string) (*bearer, error) {
	if token != "" || file == "" {
		return &bearer{tok: token}, nil
	}
	b := &bearer{file: file}
	tok, err := b.load()
	if err != nil {
		return nil, err
	}
	b.tok, b.read = tok, time.Now()
	return b, nil
}

// token is the token to send now, "" for none.
func (b *bearer) token() string {
	if b.file == "" {
		return b.tok
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.read) >= TokenFileMaxAge {
		b.reloadLocked()
	}
	return b.tok
}

// reload reads the file again at once, and reports whether the token
// changed: a request a node refused with 401 is then worth sending again.
func (b *bearer) reload() bool {
	if b.file == "" {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.tok
	b.reloadLocked()
	return b.tok != old
}

// reloadLocked reads the file. A read that fails or finds the file empty
// (one being replaced by a writer that does not rename) keeps the last
// token until the next read; it is not retried before TokenFileMaxAge,
// so a file gone for good costs a read a minute, not one a request.
func (b *bearer) reloadLocked() {
	b.read = time.Now()
	if tok, err := b.load(); err == nil {
		b.tok = tok
	}
}

func (b *bearer) load() (string, error) {
	raw, err := os.ReadFile(b.file)
	if err != nil {
		return "", fmt.Errorf("baton client: read token file: %w", err)
	}
	tok := strings.TrimSpace(string(raw))
	if tok == "" {
		return "", fmt.Errorf("baton client: token file %s is empty", b.file)
	}
	return tok, nil
}
