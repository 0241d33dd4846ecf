package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Server serves the proxy's requests on a listener with an HTTP/1.1 loop of
// its own, in place of net/http's server, whose per-request work — a
// background read that watches for the client leaving, its deadlines, its
// request and header allocations — was most of what /fn cost beyond
// nginx's (issue 34). Each connection is one goroutine: fasthttp's parser
// checks the request head, the proxy's ServeHTTP answers through a response
// writer of the connection's own (serverresponse.go), and nothing else runs
// per request: no goroutine, mostly no deadline (the connection's are moved
// at most once a second), no allocation beyond the request and its context.
// The client leaving is watched only while something waits on the request's
// context (serverctx.go), as the forwarder does after its quick probe.
//
// Only requests for the proxy are served so: /fn/ and /async-fn/ targets,
// HTTP/1.1, a body with a Content-Length (or none), a head of at most 4 KiB
// that fasthttp's and net/http's rules both accept (names, values, Host,
// no obs-fold, Expect only 100-continue). Any other connection — the API's,
// the console's, TLS, a chunked upload, anything odd — is handed to
// Fallback, a net/http server, with the bytes read from it so far: it
// serves that connection from there on as if it had accepted it, /fn
// requests included (its handler routes them to the proxy). Errors in a
// request are therefore always net/http's own answers.
//
// fasthttp's own server is not used: it writes a response after its handler
// returns (the forwarder streams a function's answer while it comes), it
// does not notice a client leaving while the handler runs, and it cannot
// pass a connection on to net/http with its bytes unread.
type Server struct {
	p        *Proxy
	fallback *http.Server
	handoff  handoffListener

	// From the fallback's configuration, as net/http reads them.
	idleTimeout, headerTimeout, readTimeout, writeTimeout time.Duration

	mu          sync.Mutex
	listeners   map[*net.Listener]struct{}
	conns       map[*serverConn]struct{}
	closing     atomic.Bool
	fallbackRun sync.Once
}

// NewServer returns a Server of p's requests that hands every other
// connection to fallback, which must not serve any listener of its own: its
// Handler serves them (the API's router, which passes /fn to p), and its
// ReadHeaderTimeout, ReadTimeout, IdleTimeout and WriteTimeout apply to the
// connections the Server keeps as well. Start it with Serve; stop it with
// Shutdown or Close, which stop fallback too.
func (p *Proxy) NewServer(fallback *http.Server) *Server {
	s := &Server{p: p, fallback: fallback, readTimeout: fallback.ReadTimeout, writeTimeout: fallback.WriteTimeout,
		idleTimeout: fallback.IdleTimeout, headerTimeout: fallback.ReadHeaderTimeout,
		listeners: map[*net.Listener]struct{}{}, conns: map[*serverConn]struct{}{}}
	if s.idleTimeout == 0 {
		s.idleTimeout = s.readTimeout
	}
	if s.headerTimeout == 0 {
		s.headerTimeout = s.readTimeout
	}
	s.handoff.conns = make(chan net.Conn)
	s.handoff.done = make(chan struct{})
	return s
}

// Serve accepts connections on ln and serves each on a goroutine of its
// own, until Shutdown or Close (http.ErrServerClosed) or an error of ln.
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(&ln, true) {
		return http.ErrServerClosed
	}
	defer s.track(&ln, false)
	s.fallbackRun.Do(func() {
		s.handoff.addr = ln.Addr()
		go func() {
			if err := s.fallback.Serve(&s.handoff); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.p.log.Error("the server of the connections the proxy's server hands over stopped", "error", err)
			}
		}()
	})
	var delay time.Duration // after a failed accept, as net/http waits
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Temporary() { // net/http's test (EMFILE and the like)
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.p.log.Error("accept failed; retrying", "error", err, "in", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		if fc := s.newConn(c); fc != nil {
			go fc.serve()
		}
	}
}

func (s *Server) track(ln *net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.listeners, ln)
		return true
	}
	if s.closing.Load() {
		return false
	}
	s.listeners[ln] = struct{}{}
	return true
}

// newConn begins serving c; nil (c closed) once the server is closing.
func (s *Server) newConn(c net.Conn) *serverConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		c.Close()
		return nil
	}
	fc := &serverConn{s: s, c: c}
	s.conns[fc] = struct{}{}
	return fc
}

// forget stops counting fc among the server's connections.
func (s *Server) forget(fc *serverConn) {
	s.mu.Lock()
	delete(s.conns, fc)
	s.mu.Unlock()
}

// Shutdown stops accepting, closes the connections that wait for a request,
// lets the others finish the one they serve (its response says Connection:
// close), shuts the fallback down, and returns when all are done or ctx
// ends (its error).
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopListening()
	fallback := make(chan error, 1)
	go func() { fallback <- s.fallback.Shutdown(ctx) }()
	wait := time.Millisecond
	for !s.closeIdle() {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
	return <-fallback
}

// Close closes the listeners and every connection at once, the fallback's too.
func (s *Server) Close() error {
	s.stopListening()
	s.mu.Lock()
	for fc := range s.conns {
		fc.state.Store(connClosed)
		fc.c.Close()
	}
	s.mu.Unlock()
	return s.fallback.Close()
}

func (s *Server) stopListening() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing.Store(true)
	for ln := range s.listeners {
		(*ln).Close()
	}
}

// closeIdle closes the connections waiting for a request and reports
// whether none is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for fc := range s.conns {
		if fc.state.CompareAndSwap(connIdle, connClosed) {
			fc.c.Close()
		}
	}
	return len(s.conns) == 0
}

// handoffListener is what the fallback serves: the connections the Server
// passed on.
type handoffListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	addr  net.Addr
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// give passes c to the fallback (closing it when the fallback has stopped).
func (l *handoffListener) give(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

// replayConn is a connection handed over with the bytes the Server read
// from it first.
type replayConn struct {
	net.Conn
	read []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.read) > 0 {
		n := copy(p, c.read)
		c.read = c.read[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
