package proxy

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// reqCtx is the context of a request on a Server's connection. It is
// canceled when ServeHTTP returns, as net/http's is, and when the client
// goes — which is watched only while something waits on it: Done or
// AfterFunc (the forwarder after its quick probe, a cold start, a full
// pool, a dial) start a goroutine that waits until the connection can be
// read, once the request's body has been read (or at once without one). End
// of file or a reset there is the client leaving; a byte is a pipelined
// request, and ends the watch (net/http's background read stops there
// too). Err peeks once, without waiting. fasthttp has no such watch: its
// handler learns of a client gone only when it writes.
type reqCtx struct {
	fc     *serverConn
	mu     sync.Mutex
	done   chan struct{}
	err    error
	afters []*afterFunc
	watch  bool // the client is watched, or will be once the body is read
}

type afterFunc struct{ f func() }

var _ context.Context = (*reqCtx)(nil)

func (c *reqCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *reqCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	c.wantWatch()
	return c.done
}

// Err is context.Canceled once the request ended or the client left: when
// no watch runs, a peek at the connection says whether it has.
func (c *reqCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && peerClosed(c.fc.c) {
		c.cancelLocked(context.Canceled)
	}
	return c.err
}

// Value answers net/http's keys of a request context.
func (c *reqCtx) Value(key any) any {
	switch key {
	case http.ServerContextKey:
		return c.fc.s.fallback
	case http.LocalAddrContextKey:
		return c.fc.c.LocalAddr()
	}
	return nil
}

// AfterFunc arranges f to run in a goroutine of its own once c is canceled
// (context.AfterFunc uses it), and starts watching the client.
func (c *reqCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	c.afters = append(c.afters, a)
	c.wantWatch()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, b := range c.afters {
			if b == a {
				c.afters = append(c.afters[:i], c.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

func (c *reqCtx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelLocked(err)
}

func (c *reqCtx) cancelLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	for _, a := range c.afters {
		go a.f()
	}
	c.afters = nil
}

// wantWatch asks for the client to be watched (with c.mu held).
func (c *reqCtx) wantWatch() {
	if c.watch || c.err != nil {
		return
	}
	c.watch = true
	fc := c.fc
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	fc.watchFor = c
	if fc.bodyDone {
		fc.startWatch()
	}
}

// bodyEnded notes that the request's body has been read, and starts the
// watch asked for meanwhile.
func (fc *serverConn) bodyEnded() {
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	fc.bodyDone = true
	if fc.watchFor != nil && fc.watching == nil {
		fc.startWatch()
	}
}

// startWatch starts the goroutine that waits for the client to leave (with
// fc.wmu held). It owns the connection's read deadline until stopWatch.
func (fc *serverConn) startWatch() {
	if fc.watching != nil {
		return
	}
	done := make(chan struct{})
	fc.watching = done
	_ = fc.c.SetReadDeadline(time.Time{})
	ctx := fc.watchFor
	go func() {
		defer close(done)
		if awaitPeerClose(fc.c) {
			ctx.cancel(context.Canceled)
		}
	}()
}

// stopWatch ends the watch, if one runs, and waits for it: a past read
// deadline ends its wait.
func (fc *serverConn) stopWatch() {
	fc.wmu.Lock()
	done := fc.watching
	fc.watchFor, fc.watching = nil, nil
	fc.wmu.Unlock()
	if done == nil {
		return
	}
	_ = fc.c.SetReadDeadline(aLongTimeAgo)
	<-done
	fc.rd = aLongTimeAgo // the next wait sets its own
}
