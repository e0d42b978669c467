package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestAddr_IsBelowTheEphemeralRangeAndCanBeListenedOn: the address is
// free to listen on, and its port is one no outgoing connection takes.
func TestAddr_IsBelowTheEphemeralRangeAndCanBeListenedOn(t *testing.T) {
	lo, hi := portRange()
	for range 20 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if port < lo || port >= hi {
			t.Errorf("port %d outside [%d, %d)", port, lo, hi)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen on %s: %v", addr, err)
		}
		l.Close()
	}
}

// TestAddr_NeverGivesOnePortTwice: a cluster draws all its ports before
// any node listens, so a port free for two draws would go to two
// listeners. 500 random draws from this range would repeat one almost
// surely.
func TestAddr_NeverGivesOnePortTwice(t *testing.T) {
	seen := map[string]bool{}
	for range 500 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("%s given twice", addr)
		}
		seen[addr] = true
	}
}
