// Package hostnet keeps the host's network still under a browser.
//
// Chromium aborts the requests in flight, loopback ones included, with
// net::ERR_NETWORK_CHANGED whenever an address of one of the host's
// interfaces comes or goes. The fault-injection suite's clusters
// (tests/testcluster) add a bridge with an address to the host for each
// cluster and remove it after, while other packages' browser tests run
// beside them in the same `go test ./...`: a page then fails to load, or a
// request of it fails, for no fault of the code under test.
//
// So whoever changes the host's interfaces does it under Change, which
// takes a lock file exclusively, and a browser holds the same lock shared
// while it runs (Hold). The lock is flock(2) on one file in the temporary
// directory, so it holds across the test binaries that go test runs at
// once, and is let go by the kernel if a process dies holding it.
package hostnet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the lock file, in os.TempDir: every test binary of one
// go test run sees the same one.
const lockName = "baton-host-network.lock"

// Change runs change, which adds or removes interfaces or addresses of
// the host, while no browser holds the network (Hold): it waits for those
// that do to finish.
func Change(change func() error) error {
	release, err := lock(syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer release()
	return change()
}

// Hold keeps the host's interfaces as they are until release is called:
// a Change waits until then.
func Hold() (release func(), err error) { return lock(syscall.LOCK_SH) }

// lock takes the lock file with how (LOCK_SH or LOCK_EX), waiting for it.
func lock(how int) (func(), error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), lockName), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("open the host network's lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("take the host network's lock: %w", err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
