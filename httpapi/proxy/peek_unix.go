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
	err = rc.Control(func(fd uintptr) {
		_, closed := peek(fd)
		open = !closed
	})
	return err == nil && open
}

// peerClosed reports whether the peer has closed c (or reset it) by now;
// false when bytes wait in it, or c cannot say.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	if err := rc.Control(func(fd uintptr) { _, closed = peek(fd) }); err != nil {
		return true
	}
	return closed
}

// awaitPeerClose waits until c can be read and reports whether that is
// because the peer closed it (or reset it): false when bytes came, when c's
// read deadline passed, or at once when c cannot say.
func awaitPeerClose(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	err = rc.Read(func(fd uintptr) bool {
		var ready bool
		ready, closed = peek(fd)
		return ready
	})
	return err == nil && closed
}

// peek looks at a socket without taking a byte or waiting: ready when it
// can be read, closed when that is because its peer closed it or reset it.
func peek(fd uintptr) (ready, closed bool) {
	var buf [1]byte
	n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	switch {
	case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK || err == syscall.EINTR:
		return false, false
	case err != nil, n == 0:
		return true, true
	}
	return true, false
}
