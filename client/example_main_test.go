package client_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The examples run against a real baton process: the binary BATON_BIN
// names, or else one built from the repository this module sits in (its
// parent directory). The client's module imports nothing of the server's,
// so here the server is a process, as for the Python and TypeScript
// clients. The client's tests against a server in process, with every
// response checked against the OpenAPI document, are the server module's
// (tests/clientsuite).

var exampleAddr string

func TestMain(m *testing.M) {
	code, err := runWithServer(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client examples:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// exampleServer is the URL of the node the examples use.
func exampleServer() string { return exampleAddr }

func runWithServer(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "baton-client-examples-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	bin, err := batonBinary(dir)
	if err != nil {
		return 0, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return 0, err
	}
	peerAddr, err := freeAddr()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(bin, "serve", "--data-dir", filepath.Join(dir, "data"), "--http-addr", httpAddr,
		"--peer-url", "http://"+peerAddr, "--client-url", "", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", bin, err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	exampleAddr = "http://" + httpAddr
	if err := awaitReady(exampleAddr, time.Minute); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// batonBinary is BATON_BIN, or a baton built into dir from the repository
// around this module.
func batonBinary(dir string) (string, error) {
	if bin := os.Getenv("BATON_BIN"); bin != "" {
		return bin, nil
	}
	f, err := os.Open(filepath.Join("..", "go.mod"))
	if err == nil {
		defer f.Close()
		first, _ := bufio.NewReader(f).ReadString('\n')
		if strings.TrimSpace(first) == "module github.com/baton-dev/baton" {
			bin := filepath.Join(dir, "baton")
			build := exec.Command("go", "build", "-o", bin, ".")
			build.Dir = ".."
			if out, err := build.CombinedOutput(); err != nil {
				return "", fmt.Errorf("go build baton: %v\n%s", err, out)
			}
			return bin, nil
		}
	}
	return "", fmt.Errorf("no baton to run the examples against: set BATON_BIN to a baton binary")
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// awaitReady polls the node's /readyz until it answers 200, or within
// fails.
func awaitReady(base string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the node at %s was not ready within %s (last: %v)", base, within, err)
		}
		time.Sleep(100 * time.Millisecond) // polling the node: its pace
	}
}
