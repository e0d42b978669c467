// Package freeport finds loopback ports for listeners that tests and the
// bench open later, or that processes they start open: etcd members and
// baton nodes, whose addresses must be known before they listen.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Addr returns a loopback address whose port was free a moment ago.
//
// The port is drawn from below the kernel's ephemeral range. A port that
// "127.0.0.1:0" hands out goes back to that range when its listener
// closes, and the next outgoing connection of any process may take it as
// its local end before the caller listens: under a loaded test run that
// happened often enough to fail CI. Below the range only another such
// pick can take it in the meantime, and Addr never picks a port twice in
// one process: a cluster's ports are all drawn before its nodes listen,
// so a free port drawn again would be given to two listeners.
func Addr() (string, error) {
	lo, hi := portRange()
	for range 100 {
		port := lo + rand.IntN(hi-lo)
		if !pick(port) {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

var (
	mu     sync.Mutex
	picked = map[int]bool{}
)

// pick claims port for this process, unless Addr drew it before.
func pick(port int) bool {
	mu.Lock()
	defer mu.Unlock()
	if picked[port] {
		return false
	}
	picked[port] = true
	return true
}

// portRange is the ports Addr draws from: from 10000 up to the start of
// the ephemeral range (Linux's ip_local_port_range; 32768 where it cannot
// be read).
func portRange() (lo, hi int) {
	lo, hi = 10000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	if f := strings.Fields(string(b)); len(f) == 2 {
		if n, err := strconv.Atoi(f[0]); err == nil && n > lo+1000 {
			hi = n
		}
	}
	return lo, hi
}
