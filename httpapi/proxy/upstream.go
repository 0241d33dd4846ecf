package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"
)

// upstream keeps the proxy's connections to function processes: idle
// keep-alive connections per endpoint, at most maxConns open per endpoint
// (busy or idle; more requests wait for one). The forwarder (forwarder.go)
// writes requests and reads responses on them itself, on the handler's
// goroutine.
type upstream struct {
	dialer   net.Dialer
	maxConns int
	idleFor  time.Duration

	mu    sync.Mutex
	hosts map[string]*hostConns
}

// hostConns are the connections to one endpoint.
type hostConns struct {
	sem  chan struct{} // one token per open connection, busy or idle
	mu   sync.Mutex
	idle []*upConn // most recently used last
}

// upConn is one connection to a function process, with its buffers and
// what the last response on it looked like (see headerCache).
type upConn struct {
	c        net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	lastUsed time.Time
	seen     headerCache
}

const (
	upstreamBuffer = 32 << 10
	// syncBodyMax is the largest body written before the response is read:
	// it fits the socket buffers, so writing it cannot block on a function
	// that answers first. Larger bodies are written from a goroutine of their own.
	syncBodyMax = 64 << 10
)

func newUpstream(maxConns int, idleFor time.Duration) *upstream {
	return &upstream{
		dialer:   net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second},
		maxConns: maxConns,
		idleFor:  idleFor,
		hosts:    map[string]*hostConns{},
	}
}

func (u *upstream) host(addr string) *hostConns {
	u.mu.Lock()
	defer u.mu.Unlock()
	h := u.hosts[addr]
	if h == nil {
		h = &hostConns{sem: make(chan struct{}, u.maxConns)}
		u.hosts[addr] = h
	}
	return h
}

// reserve takes a connection token of h, waiting for one while all are
// busy, until deadline or ctx ends (errTimeout, ctx's cause).
func (h *hostConns) reserve(ctx context.Context, deadline time.Time) error {
	select {
	case h.sem <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case h.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return errTimeout
	}
}

// dial opens a connection to target (TLS for https; a Unix socket for
// unix, whose path parseEndpoint put in Host), within deadline.
func (u *upstream) dial(ctx context.Context, target *url.URL, deadline time.Time) (*upConn, error) {
	d := u.dialer
	d.Deadline = deadline
	network := "tcp"
	if target.Scheme == unixScheme {
		network = "unix"
	}
	c, err := d.DialContext(ctx, network, target.Host)
	if err != nil {
		return nil, err
	}
	if target.Scheme == "https" {
		tc := tls.Client(c, &tls.Config{ServerName: target.Hostname(), NextProtos: []string{"http/1.1"}})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	// writerOnly hides the connection's ReadFrom, which would copy a body
	// through a fresh 32 KiB buffer instead of the writer's own.
	return &upConn{c: c, br: bufio.NewReaderSize(c, upstreamBuffer), bw: bufio.NewWriterSize(writerOnly{c}, upstreamBuffer)}, nil
}

type writerOnly struct{ io.Writer }

// take returns the most recently used idle connection still worth using, or
// nil; check peeks whether the peer closed it (before a request that cannot
// be sent twice).
func (h *hostConns) take(now time.Time, idleFor time.Duration, check bool) *upConn {
	h.mu.Lock()
	defer h.mu.Unlock()
	for n := len(h.idle); n > 0; n = len(h.idle) {
		pc := h.idle[n-1]
		h.idle = h.idle[:n-1]
		if now.Sub(pc.lastUsed) > idleFor || check && !alive(pc.c) {
			pc.c.Close()
			continue
		}
		return pc
	}
	return nil
}

// put gives a connection back for the next request, with its token.
func (h *hostConns) put(pc *upConn) {
	pc.lastUsed = time.Now()
	h.mu.Lock()
	h.idle = append(h.idle, pc)
	h.mu.Unlock()
	<-h.sem
}

// drop closes a connection and gives its token back.
func (h *hostConns) drop(pc *upConn) {
	pc.c.Close()
	<-h.sem
}

// closeIdle closes the connections idle for longer than d (all with d = 0)
// and forgets endpoints with none left.
func (u *upstream) closeIdle(d time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := time.Now()
	for addr, h := range u.hosts {
		h.mu.Lock()
		keep := h.idle[:0]
		for _, pc := range h.idle {
			if now.Sub(pc.lastUsed) >= d {
				pc.c.Close()
			} else {
				keep = append(keep, pc)
			}
		}
		clear(h.idle[len(keep):])
		h.idle = keep
		empty := len(keep) == 0 && len(h.sem) == 0
		h.mu.Unlock()
		if empty {
			delete(u.hosts, addr)
		}
	}
}

// aLongTimeAgo is a deadline that has passed: setting it unblocks all I/O.
var aLongTimeAgo = time.Unix(1, 0)

// stale reports whether a failed exchange on a reused connection is the
// sign of a connection the peer had closed, and safe to send again: the
// write failed (nothing was sent), or an idempotent request found the
// connection closed before any byte of an answer.
func stale(method string, err error) bool {
	var we headWriteError
	if errors.As(err, &we) {
		return true
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
	}
	return false
}

// headWriteError marks a failure to send the request head.
type headWriteError struct{ error }

func (e headWriteError) Unwrap() error { return e.error }
