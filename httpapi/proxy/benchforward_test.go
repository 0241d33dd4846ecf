package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/tracing"
	"github.com/slessio/sless/tracing/tracingtest"
)

// BenchmarkForward measures one proxied request inside the handler: the
// proxy's ServeHTTP called directly (no client, no server around it) on a
// reused request, forwarding to a loopback upstream that answers a constant
// without allocating, with the invocation log on. Its allocs/op is the
// "allocations per proxied request" of BenchmarkInvoke's table (issue 18:
// ≤ 4); everything the process allocates meanwhile counts, the log's
// background writer included.
//
//	go test ./httpapi/proxy -run '^$' -bench Forward -benchmem
func BenchmarkForward(b *testing.B) {
	forward := forwardRig(b, setup(b, options{}))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		forward()
	}
}

// BenchmarkForwardTraced is BenchmarkForward with spans exported (to an
// OTLP receiver on loopback, every request sampled, a trace context from
// the caller): the cost of tracing when it is on.
//
//	go test ./httpapi/proxy -run '^$' -bench ForwardTraced -benchmem
func BenchmarkForwardTraced(b *testing.B) {
	r := tracingtest.NewReceiver(b)
	for k, v := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.Endpoint(), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "",
		"OTEL_SDK_DISABLED": "", "OTEL_TRACES_EXPORTER": "", "OTEL_TRACES_SAMPLER": "always_on"} {
		b.Setenv(k, v)
	}
	shutdown, err := tracing.Setup(context.Background(), "sless-bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = shutdown(context.Background()) })
	forward := forwardRig(b, setup(b, options{}), "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		forward()
	}
}

// forwardRig deploys function "fwd" of f on a constantUpstream and returns
// one proxied request of it, as BenchmarkForward measures it: ServeHTTP on a
// reused request and response writer (it fails tb on an answer other than
// the constant). header are pairs of request header and value.
func forwardRig(tb testing.TB, f *fixture, header ...string) func() {
	addr := constantUpstream(tb)
	f.create("fwd", domain.FunctionSpec{Runtime: "python3.11", TimeoutSec: 30}, map[string]string{"handler.py": "x"}, true)
	f.fn("fwd", func(fn *domain.Function) ([]domain.Event, error) {
		return fn.SucceedBuild(1, "test-image", "", time.Now())
	})
	f.rollout("fwd", "http://"+addr)
	req := httptest.NewRequest(http.MethodGet, "/fn/"+f.ns+"/fwd/", nil)
	req.RemoteAddr = "127.0.0.1:40000"
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := &discardWriter{h: http.Header{}}
	return func() {
		clear(w.h)
		w.status, w.n = 0, 0
		f.proxy.ServeHTTP(w, req)
		if w.status != http.StatusOK || w.n != int64(len(constantBody)) {
			tb.Fatalf("the proxy answered %d with %d bytes", w.status, w.n)
		}
	}
}

// constantBody is what constantUpstream answers.
const constantBody = `"ok"`

// constantUpstream serves keep-alive HTTP/1.1 on loopback, answering every
// request (GET, no body) with a constant from prepared bytes: an upstream
// whose own allocations do not blur the proxy's count.
func constantUpstream(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4\r\n\r\n" + constantBody)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReaderSize(c, 16<<10)
				for {
					// A request ends at its blank line (the benchmark sends no body).
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(bytes.TrimRight(line, "\r\n")) == 0 {
							break
						}
					}
					if _, err := c.Write(answer); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// discardWriter is a ResponseWriter that keeps the status and counts the body.
type discardWriter struct {
	h      http.Header
	status int
	n      int64
}

func (w *discardWriter) Header() http.Header { return w.h }

func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += int64(len(p))
	return len(p), nil
}

func (w *discardWriter) Flush() {}
