package proxy

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzAnswer feeds arbitrary bytes, as a function instance's answer, to
// the forwarder's response parser and copier (answer: readHead, the body
// by length, chunked or to the end, the trailers) through a connection
// that closes after them. It must never panic nor hang, and what it passes
// on to the client carries none of the hop-by-hop or platform headers, and
// no Content-Length beside a chunked body. The seeds in
// testdata/fuzz/FuzzAnswer run with go test.
func FuzzAnswer(f *testing.F) {
	f.Fuzz(func(t *testing.T, method bool, data []byte) {
		fn, proxySide := net.Pipe()
		defer fn.Close()
		defer proxySide.Close()
		go func() {
			_, _ = fn.Write(data)
			_ = fn.Close() // the instance closes its connection
		}()
		r := httptest.NewRequest(http.MethodGet, "/fn/x", nil)
		if method {
			r.Method = http.MethodHead
		}
		deadline := time.Now().Add(10 * time.Second)
		pc := &upConn{c: proxySide, deadline: deadline}
		pc.br = bufio.NewReaderSize(pc, upstreamBuffer) // through Read, as dial makes it
		_ = proxySide.SetDeadline(deadline)
		c := &call{up: pc, ctx: r.Context(), deadline: deadline, timeout: 10}
		rr := httptest.NewRecorder()
		w := &recorder{ResponseWriter: rr}

		done := make(chan struct{})
		var err error
		go func() {
			defer close(done)
			_, err = new(Proxy).answer(w, r, c, pc)
		}()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Fatalf("answer did not return for %q", data)
		}
		if c.unwatch != nil {
			c.unwatch()
		}
		if time.Now().After(deadline) {
			t.Fatalf("answer ran into the function's deadline on %d bytes: it waited for what could not come", len(data))
		}
		if err != nil && w.status == 0 {
			return // the caller answers 502 and records err
		}
		h := rr.Header()
		for _, k := range []string{"Connection", "Keep-Alive", "Transfer-Encoding", "Upgrade", "Proxy-Connection", "Te",
			LogHeader, InvocationHeader, ErrorHeader} {
			if _, ok := h[k]; ok {
				t.Fatalf("the client got the header %s: %q", k, h[k])
			}
		}
		for k := range h {
			if strings.ContainsAny(strings.TrimPrefix(k, http.TrailerPrefix), "\r\n:") {
				t.Fatalf("the client got a header named %q", k)
			}
		}
	})
}
