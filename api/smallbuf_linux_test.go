package api_test

import (
	"net"
	"syscall"
	"testing"
)

// dialSmallReceiveBuffer connects with a receive buffer of a few KiB, set
// before the connection opens so the window never grows past it: a client
// that stops reading then holds up the server's writes after a few KiB.
func dialSmallReceiveBuffer(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}
