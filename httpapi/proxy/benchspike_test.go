package proxy_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"
)

// rawForwarder is the spike of issue 18, a column of BenchmarkInvoke (not a
// proxy to ship): the least a forwarder behind net/http's server does —
// pooled keep-alive upstream connections, the request head written straight
// from the incoming request (no clone, no http.Request.Write), the response
// head parsed by hand from the connection's buffer, the body copied by its
// Content-Length — with no checks, no invocation log and no metrics. Its CPU
// per request next to nginx's says whether a forwarder of our own on
// net/http can meet the target at all, before one is built.
type rawForwarder struct {
	addr string            // host:port of the function
	idle chan *rawUpstream // idle connections, most recent first out
}

type rawUpstream struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func newRawForwarder(addr string) *rawForwarder {
	return &rawForwarder{addr: addr, idle: make(chan *rawUpstream, 256)}
}

// hopHeaders are not forwarded (RFC 9110 §7.6.1).
var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Proxy-Authorization": true, "Proxy-Authenticate": true}

func (p *rawForwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var u *rawUpstream
	select {
	case u = <-p.idle:
	default:
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		u = &rawUpstream{c: c, br: bufio.NewReaderSize(c, 32<<10), bw: bufio.NewWriterSize(c, 32<<10)}
	}
	if err := p.exchange(w, r, u); err != nil {
		u.c.Close()
		return
	}
	select {
	case p.idle <- u:
	default:
		u.c.Close()
	}
}

func (p *rawForwarder) exchange(w http.ResponseWriter, r *http.Request, u *rawUpstream) error {
	bw := u.bw
	bw.WriteString(r.Method)
	bw.WriteString(" /")
	if r.URL.RawQuery != "" {
		bw.WriteByte('?')
		bw.WriteString(r.URL.RawQuery)
	}
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(p.addr)
	bw.WriteString("\r\n")
	for k, vs := range r.Header {
		if hopHeaders[k] {
			continue
		}
		for _, v := range vs {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("X-Forwarded-For: ")
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		bw.WriteString(host)
	}
	bw.WriteString("\r\n")
	if r.ContentLength > 0 {
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(r.ContentLength, 10))
		bw.WriteString("\r\n\r\n")
		if _, err := io.CopyN(bw, r.Body, r.ContentLength); err != nil {
			return err
		}
	} else {
		bw.WriteString("\r\n")
	}
	if err := bw.Flush(); err != nil {
		return err
	}

	line, err := u.br.ReadSlice('\n')
	if err != nil || len(line) < 12 {
		return io.ErrUnexpectedEOF
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return err
	}
	h := w.Header()
	length := int64(-1)
	for {
		line, err := u.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return io.ErrUnexpectedEOF
		}
		v = bytes.TrimSpace(v)
		key := http.CanonicalHeaderKey(string(k))
		if key == "Content-Length" {
			length, _ = strconv.ParseInt(string(v), 10, 64)
		}
		if hopHeaders[key] {
			continue
		}
		h[key] = append(h[key], string(v))
	}
	if length < 0 {
		return io.ErrUnexpectedEOF // the spike reads only bodies with a length
	}
	w.WriteHeader(status)
	for length > 0 {
		b, err := u.br.Peek(int(min(length, int64(u.br.Size()))))
		if len(b) == 0 {
			return err
		}
		w.Write(b)
		u.br.Discard(len(b))
		length -= int64(len(b))
	}
	return nil
}

// fasthttpForwarder is the spike of issue 18's second means, a column of
// BenchmarkInvoke: /fn served by fasthttp's server, forwarding with its
// HostClient (pooled keep-alive connections), the request and response
// passed through as fasthttp parsed them, with no checks, no invocation log
// and no metrics. It returns the forwarder's URL and its stop.
func fasthttpForwarder(tb testing.TB, addr string) string {
	hc := &fasthttp.HostClient{Addr: addr, MaxConns: 1024}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		req := &ctx.Request
		req.SetRequestURI("/")
		req.Header.SetHost(addr)
		req.Header.Set("X-Forwarded-For", ctx.RemoteIP().String())
		if err := hc.Do(req, &ctx.Response); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadGateway)
		}
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go srv.Serve(ln)
	tb.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + ln.Addr().String() + "/"
}
