//go:build failpoints

package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/baton-dev/baton/node"
)

// armFailpoints lets the fault-injection suite (tests/chaos) drive
// faults a process signal cannot make by itself, in a binary built with
// -tags failpoints only: SIGUSR1 halts the node's audit trail writer,
// SIGUSR2 resumes it. It returns the function that disarms them.
func armFailpoints(n *node.Node) (disarm func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				n.Trail().HaltTrail(s == syscall.SIGUSR1)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}
