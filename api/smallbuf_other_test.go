//go:build !linux

package api_test

import (
	"net"
	"testing"
)

// dialSmallReceiveBuffer connects with the system's receive buffer where
// setting it before connect is not portable: the slow-client test then
// needs more events to fill it, nothing else changes.
func dialSmallReceiveBuffer(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	return conn
}
