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
	"os"
	"sync"
	"sync/atomic"
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

	mu    sync.RWMutex
	hosts map[string]*hostConns
}

// hostConns are the connections to one endpoint.
type hostConns struct {
	sem  chan struct{} // one token per open connection, busy or idle
	mu   sync.Mutex
	idle []*upConn // most recently used last
}

// upConn is one connection to a function process, with its buffers, what
// the last response on it looked like (see headerCache), and its deadlines.
//
// The deadlines are set only when they must change (see setReadDeadline,
// keepWriteDeadline): a system call and a timer update each, which on a
// kept-alive connection the next request can mostly do without. Reads pass
// through Read, which moves a quick probe's deadline (await) to the
// exchange's own when a read outside the probe meets it, so the probe's
// deadline may stay set once the answer began.
type upConn struct {
	c        net.Conn
	br       *bufio.Reader // reads through Read
	bw       *bufio.Writer
	lastUsed time.Time
	seen     headerCache

	rd, wd   time.Time   // the read and write deadlines last set on c (zero: none)
	deadline time.Time   // of the exchange under way: the function's timeout
	probing  bool        // a quick probe reads: its deadline passing is its answer
	stopped  atomic.Bool // stop set a past deadline, which nothing may move (set from other goroutines)
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
	u.mu.RLock()
	h := u.hosts[addr]
	u.mu.RUnlock()
	if h != nil {
		return h
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if h = u.hosts[addr]; h == nil {
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
	pc := &upConn{c: c, bw: bufio.NewWriterSize(writerOnly{c}, upstreamBuffer)}
	pc.br = bufio.NewReaderSize(pc, upstreamBuffer)
	return pc, nil
}

// Read reads from the connection for br. A read deadline before the
// exchange's (a quick probe's, left set once the answer began) that passes
// outside a probe is moved to the exchange's deadline, and the read goes on.
func (pc *upConn) Read(p []byte) (int, error) {
	for {
		n, err := pc.c.Read(p)
		if n > 0 || err == nil || pc.probing || !pc.rd.Before(pc.deadline) || pc.stopped.Load() ||
			!errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(pc.deadline) {
			return n, err
		}
		if err := pc.setReadDeadline(pc.deadline); err != nil {
			return 0, err
		}
	}
}

// setReadDeadline sets the read deadline of the connection to t, unless it is t already.
func (pc *upConn) setReadDeadline(t time.Time) error {
	if t.Equal(pc.rd) {
		return nil
	}
	pc.rd = t
	return pc.c.SetReadDeadline(t)
}

// writeSlack is how much later than an exchange's deadline the connection's
// write deadline may be: one set for a request serves the next ones within
// writeSlack. A write the function does not take fails that much after its
// timeout at most (a 504 all the same: see call.timedOut).
const writeSlack = 100 * time.Millisecond

// keepWriteDeadline makes the write deadline of the connection fall within
// writeSlack after t, setting it (to t + writeSlack) only when it does not.
func (pc *upConn) keepWriteDeadline(t time.Time) error {
	if !pc.wd.Before(t) && !pc.wd.After(t.Add(writeSlack)) {
		return nil
	}
	pc.wd = t.Add(writeSlack)
	return pc.c.SetWriteDeadline(pc.wd)
}

// setDeadline sets both deadlines of the connection to t.
func (pc *upConn) setDeadline(t time.Time) {
	pc.rd, pc.wd = t, t
	_ = pc.c.SetDeadline(t)
}

// stop unblocks every read and write on the connection for good, from any
// goroutine: the connection is not used again.
func (pc *upConn) stop() {
	pc.stopped.Store(true)
	_ = pc.c.SetDeadline(aLongTimeAgo)
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
