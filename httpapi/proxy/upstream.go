package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
)

// upstream is the proxy's HTTP/1.1 client for function processes. Unlike
// http.Transport, which hands every request to a writer and a reader
// goroutine per connection, it writes the request and reads the response on
// the handler's goroutine: on a small machine those hand-offs were most of
// the proxy's cost. It keeps idle keep-alive connections per endpoint (at
// most maxConns open per endpoint; more requests wait for one), and:
//
//   - a bodiless request that fails on a reused connection before any answer
//     (the process closed it, or restarted) is sent again on a new one;
//   - a reused connection is checked for a close from the peer (one
//     non-blocking peek) before a request with a body, which cannot be resent;
//   - a body of unknown or large size is written from its own goroutine while
//     the response is read, so a function that answers before reading all of
//     it (413, redirect) does not deadlock with us;
//   - ctx ending (timeout, client gone) sets a past deadline on the
//     connection, which unblocks any read or write, and the connection is
//     dropped.
//
// https endpoints go through a plain http.Transport.
type upstream struct {
	dialer   net.Dialer
	maxConns int
	idleFor  time.Duration
	tls      *http.Transport

	mu    sync.Mutex
	hosts map[string]*hostConns
}

// hostConns are the connections to one endpoint.
type hostConns struct {
	sem  chan struct{} // one token per open connection, busy or idle
	mu   sync.Mutex
	idle []*upConn // most recently used last
}

type upConn struct {
	c        net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	lastUsed time.Time
}

const (
	upstreamBuffer = 32 << 10
	// syncBodyMax is the largest body of known length written before the
	// response is read: it fits the socket buffers, so it cannot block.
	syncBodyMax = 64 << 10
)

func newUpstream(maxConns int, idleFor time.Duration) *upstream {
	return &upstream{
		dialer:   net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second},
		maxConns: maxConns,
		idleFor:  idleFor,
		hosts:    map[string]*hostConns{},
		tls: &http.Transport{Proxy: nil, MaxConnsPerHost: maxConns, MaxIdleConnsPerHost: maxConns,
			IdleConnTimeout: idleFor, DisableCompression: true},
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

// RoundTrip sends req to its URL's host and returns the response, whose Body
// gives the connection back (or closes it) when read to the end or closed.
func (u *upstream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return u.tls.RoundTrip(req)
	}
	ctx := req.Context()
	h := u.host(req.URL.Host)
	select {
	case h.sem <- struct{}{}:
	default:
		select { // all connections busy: wait for one, within the request's time
		case h.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	pc := h.take(time.Now(), u.idleFor, hasBody)
	reused := pc != nil
	for {
		if pc == nil {
			var err error
			if pc, err = u.dial(ctx, req.URL.Host); err != nil {
				<-h.sem
				return nil, err
			}
		}
		resp, err := u.exchange(ctx, h, pc, req)
		if err == nil {
			return resp, nil
		}
		pc.c.Close()
		if reused && !hasBody && ctx.Err() == nil && stale(req.Method, err) {
			pc, reused = nil, false // a stale keep-alive connection: once more on a new one
			continue
		}
		<-h.sem
		return nil, err
	}
}

func (u *upstream) dial(ctx context.Context, addr string) (*upConn, error) {
	c, err := u.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &upConn{c: c, br: bufio.NewReaderSize(c, upstreamBuffer), bw: bufio.NewWriterSize(c, upstreamBuffer)}, nil
}

// take returns the most recently used idle connection still worth using, or nil.
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

// put gives a connection back for the next request.
func (h *hostConns) put(pc *upConn) {
	pc.lastUsed = time.Now()
	h.mu.Lock()
	h.idle = append(h.idle, pc)
	h.mu.Unlock()
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
	u.tls.CloseIdleConnections()
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

// exchange writes req on pc and reads the response head.
func (u *upstream) exchange(ctx context.Context, h *hostConns, pc *upConn, req *http.Request) (*http.Response, error) {
	stop := context.AfterFunc(ctx, func() { pc.c.SetDeadline(aLongTimeAgo) })
	var wrote chan error // the body writer's outcome, when it runs apart
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength > 0 && req.ContentLength <= syncBodyMax {
		if err := writeRequest(pc.bw, req); err != nil {
			stop()
			if req.Body == nil || req.Body == http.NoBody {
				err = headWriteError{err}
			}
			return nil, ctxErr(ctx, err)
		}
	} else {
		wrote = make(chan error, 1)
		go func() {
			err := writeRequest(pc.bw, req)
			if err != nil {
				pc.c.SetDeadline(aLongTimeAgo) // the function waits for the rest: stop reading its answer
			}
			wrote <- err
		}()
	}
	resp, err := readResponse(pc.br, req)
	if err != nil {
		stop()
		if wrote != nil {
			pc.c.SetDeadline(aLongTimeAgo) // ends the writer; the connection is dropped
			if werr := <-wrote; werr != nil && !errors.Is(werr, os.ErrDeadlineExceeded) {
				err = werr // the body could not be read (over the limit, client gone)
			}
		}
		return nil, ctxErr(ctx, err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		resp.Body = &upgraded{upConn: pc, h: h, stop: stop}
		return resp, nil
	}
	resp.Body = &upBody{body: resp.Body, pc: pc, h: h, stop: stop, wrote: wrote, reuse: !resp.Close && !req.Close}
	return resp, nil
}

// ctxErr prefers the context's cause (the function's timeout, the client
// leaving) over the I/O error it provoked.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

func writeRequest(bw *bufio.Writer, req *http.Request) error {
	if err := req.Write(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// readResponse reads the head of the final response, passing over 1xx
// informational ones (but not 101, which switches protocols).
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	// ReadResponse reports a connection closed before any byte as
	// ErrUnexpectedEOF; a stale connection must read as plain EOF.
	if _, err := br.Peek(1); err != nil {
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		resp.Body.Close()
	}
}

// upBody is a response body on a pooled connection: read to its end, the
// connection goes back to the pool; closed early, it is closed.
type upBody struct {
	body  io.ReadCloser
	pc    *upConn
	h     *hostConns
	stop  func() bool
	wrote chan error
	reuse bool
	done  bool
}

func (b *upBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.finish(true)
	} else if err != nil {
		b.finish(false)
	}
	return n, err
}

func (b *upBody) Close() error {
	if !b.done {
		b.finish(false)
	}
	return nil
}

// finish releases the connection: back to the pool when the whole exchange
// is complete and nothing cut it, closed otherwise.
func (b *upBody) finish(complete bool) {
	b.done = true
	ok := b.stop() && complete && b.reuse
	if b.wrote != nil {
		if !ok {
			b.pc.c.SetDeadline(aLongTimeAgo)
		}
		ok = <-b.wrote == nil && ok
	}
	if ok {
		b.h.put(b.pc)
		return
	}
	b.pc.c.Close()
	<-b.h.sem
}

// upgraded is the connection after 101 Switching Protocols: ReverseProxy
// copies bytes both ways over it; it never returns to the pool.
type upgraded struct {
	*upConn
	h      *hostConns
	stop   func() bool
	closed sync.Once
}

func (u *upgraded) Read(p []byte) (int, error)  { return u.br.Read(p) }
func (u *upgraded) Write(p []byte) (int, error) { return u.c.Write(p) }

func (u *upgraded) Close() error {
	u.closed.Do(func() {
		u.stop()
		u.c.Close()
		<-u.h.sem
	})
	return nil
}
