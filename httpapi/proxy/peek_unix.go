//go:build unix

package proxy

import (
	"net"
	"syscall"
)

// alive reports whether an idle connection is still open: a non-blocking
// peek that sees end of file (or an error) means the peer closed it. The
// peek ignores the connection's read deadline, which on a pooled
// connection has mostly passed (a read would fail on it at once).
func alive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := true
	var buf [1]byte
	err = rc.Control(func(fd uintptr) {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK || err == syscall.EINTR:
		case err != nil, n == 0:
			open = false
		}
	})
	return err == nil && open
}
