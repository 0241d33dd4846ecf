package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http/httpguts"

	"github.com/slessio/sless/invoke"
)

// States of a Server's connection, for Shutdown: one idle between requests
// may be closed.
const (
	connIdle int32 = iota
	connActive
	connClosed
)

const (
	// serverReadBuffer is the largest request head the loop takes; a larger
	// one goes to the fallback, whose MaxHeaderBytes applies. As net/http's
	// buffers, with which the memory of an idle connection stays the same.
	serverReadBuffer  = 4 << 10
	serverWriteBuffer = 4 << 10
	// maxPostHandlerRead is how much of a body its handler left unread is
	// read and dropped to keep the connection (net/http's 256 KiB).
	maxPostHandlerRead = 256 << 10
	// deadlineSlack is how much earlier than wanted the idle deadline of a
	// connection may be left: it is moved at most once a second.
	deadlineSlack = time.Second
)

var (
	serverReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, serverReadBuffer) }}
	serverWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, serverWriteBuffer) }}
)

// serverConn is one connection of a Server: its buffers, and what its
// requests reuse — the header map and its strings, when a line is the same
// as the last request's at its place (headerCache), the URL.
type serverConn struct {
	s      *Server
	c      net.Conn
	state  atomic.Int32
	br     *bufio.Reader
	bw     *bufio.Writer
	remote string
	passed bool // handed over or hijacked: the connection is someone else's

	head      fasthttp.RequestHeader
	lines     headerCache
	header    http.Header
	vals      []string // the header's values
	url       url.URL
	uri, host string // the last request's
	tmpl      http.Request
	w         response
	body      requestBody
	start     time.Time // of the request being served
	rd, wd    time.Time // the deadlines last set on c

	// The watch of the client while something waits on the request's
	// context (serverctx.go).
	wmu      sync.Mutex
	watchFor *reqCtx       // the request whose context wants the client watched
	watching chan struct{} // closed when the watch has ended; nil: none runs
	bodyDone bool          // the request's body was read to its end, or it has none
}

// serve serves the requests of one connection until it closes, fails, or
// is passed on.
func (fc *serverConn) serve() {
	defer func() {
		fc.s.forget(fc)
		if !fc.passed && fc.br != nil && fc.body.unread() > 0 {
			fc.lingerClose()
		}
		if !fc.passed {
			fc.c.Close()
		}
		if fc.br != nil && !fc.passed {
			fc.br.Reset(nil)
			serverReaders.Put(fc.br)
			fc.bw.Reset(nil)
			serverWriters.Put(fc.bw)
		}
	}()
	if _, ok := fc.c.(*tls.Conn); ok {
		fc.handover(nil)
		return
	}
	fc.br = serverReaders.Get().(*bufio.Reader)
	fc.br.Reset(fc.c)
	fc.bw = serverWriters.Get().(*bufio.Writer)
	fc.bw.Reset(fc.c)
	fc.remote = fc.c.RemoteAddr().String()
	fc.header = http.Header{}
	fc.w.fc, fc.body.fc = fc, fc
	fc.head.DisableNormalizing() // the names are read from the raw lines (request)
	for first := true; ; first = false {
		n, err := fc.readHead(first)
		if err != nil {
			return
		}
		if n == 0 {
			fc.handover(nil)
			return
		}
		r, consumed := fc.request(n)
		if r == nil {
			fc.handover(consumed)
			return
		}
		if !fc.serveRequest(r) {
			return
		}
	}
}

var (
	crlf     = []byte("\r\n")
	headEnd  = []byte("\r\n\r\n")
	bareLFs  = []byte("\n\n")
	fnTarget = []byte(" " + Prefix)
	asTarget = []byte(" " + invoke.AsyncPrefix)
)

// readHead waits for the next request and returns the length of its head,
// whole in br; 0 when the loop does not take it (a head larger than br, or
// with an empty line of a bare line feed); an error ends the connection.
func (fc *serverConn) readHead(first bool) (int, error) {
	s := fc.s
	fc.state.Store(connIdle)
	if s.closing.Load() {
		return 0, net.ErrClosed
	}
	wait := s.idleTimeout
	if first {
		wait = s.headerTimeout
	}
	fc.keepReadDeadline(wait)
	if _, err := fc.br.Peek(1); err != nil {
		return 0, err
	}
	if !fc.state.CompareAndSwap(connIdle, connActive) { // Shutdown closed it
		return 0, net.ErrClosed
	}
	fc.start = time.Now()
	for partial := false; ; partial = true {
		b, _ := fc.br.Peek(fc.br.Buffered())
		if i := bytes.Index(b, headEnd); i >= 0 {
			return i + len(headEnd), nil
		}
		if len(b) >= fc.br.Size() || bytes.Contains(b, bareLFs) {
			return 0, nil
		}
		if !partial && s.headerTimeout > 0 { // the rest of the head within the header timeout, as net/http reads it
			fc.setReadDeadline(fc.start.Add(s.headerTimeout))
		}
		if _, err := fc.br.Peek(len(b) + 1); err != nil {
			return 0, err
		}
	}
}

// request reads the head of n bytes at the start of br into the
// connection's request, or returns nil when the loop does not take it, with
// the bytes of br it consumed (to be replayed to the fallback).
func (fc *serverConn) request(n int) (*http.Request, []byte) {
	raw, _ := fc.br.Peek(n)
	line, _, _ := bytes.Cut(raw, crlf)
	if !bytes.Contains(line, fnTarget) && !bytes.Contains(line, asTarget) {
		return nil, nil
	}
	if crlfs := bytes.Count(raw, crlf); bytes.Count(raw, crlf[1:]) != crlfs || bytes.Count(raw, crlf[:1]) != crlfs {
		return nil, nil // a bare line feed or carriage return: lines net/http and fasthttp may cut apart differently
	}
	// The raw lines first: fasthttp rewrites some in the buffer (obs-fold).
	if !fc.readHeader(raw[len(line)+len(crlf) : n-len(crlf)]) {
		return nil, nil
	}
	h := &fc.head
	buffered := fc.br.Buffered()
	if err := h.Read(fc.br); err != nil { // fasthttp's rules; nothing was consumed
		return nil, nil
	}
	if consumed := buffered - fc.br.Buffered(); consumed != n { // fasthttp found another end of the head
		// Its end is a "\n\r\n" or "\n\n" (refused above), so at or before
		// the first "\r\n\r\n": never past raw.
		return nil, raw[:min(consumed, n)]
	}
	method := methodString(h.Method())
	uri := h.RequestURI()
	length := int64(h.ContentLength())
	if !h.IsHTTP11() || method == "" || method == http.MethodConnect || length == -1 ||
		!(bytes.HasPrefix(uri, fnTarget[1:]) || bytes.HasPrefix(uri, asTarget[1:])) || hasCTL(uri) {
		return nil, raw
	}
	if length < 0 {
		length = 0
	}
	if string(uri) != fc.uri {
		fc.uri = string(uri)
	}
	if host := h.Host(); string(host) != fc.host {
		fc.host = string(host)
		if !httpguts.ValidHostHeader(fc.host) {
			fc.host = ""
			return nil, raw
		}
	}
	u := &fc.url
	if path, query, _ := strings.Cut(fc.uri, "?"); plainPath(path) {
		*u = url.URL{Path: path, RawQuery: query}
	} else { // escapes, or bytes net/url escapes: its own parse, as net/http's
		parsed, err := url.ParseRequestURI(fc.uri)
		if err != nil {
			return nil, raw
		}
		*u = *parsed
	}
	r := &fc.tmpl
	*r = http.Request{Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: fc.header,
		ContentLength: length, Host: fc.host, RemoteAddr: fc.remote, RequestURI: fc.uri,
		Close: httpguts.HeaderValuesContainsToken(fc.header["Connection"], "close"), Body: http.NoBody}
	fc.body.reset(length)
	fc.bodyDone = length == 0
	if length > 0 {
		r.Body = &fc.body
	}
	return r.WithContext(&reqCtx{fc: fc}), nil
}

// readHeader fills the connection's header map from the raw header lines
// of a head, before fasthttp reads it, as net/http would (Host is the
// request's, not a header), and reports whether the loop takes the
// request: no line net/http refuses or fasthttp reads otherwise (obs-fold),
// no Transfer-Encoding, no Expect (net/http answers 100-continue as it
// reads the body, and refuses the others).
func (fc *serverConn) readHeader(lines []byte) bool {
	hdr := fc.header
	clear(hdr)
	if n := bytes.Count(lines, crlf) + 1; cap(fc.vals) < n {
		fc.vals = make([]string, 2*n)
	}
	vals := fc.vals[:cap(fc.vals)]
	fc.lines.start()
	for i := 0; len(lines) > 0; i++ {
		var line []byte
		line, lines, _ = bytes.Cut(lines, crlf)
		if len(line) == 0 || line[0] == ' ' || line[0] == '\t' {
			return false
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			return false
		}
		l, same := fc.lines.add(k, bytes.Trim(v, " \t"))
		if !same && (!httpguts.ValidHeaderFieldName(l.raw) || !httpguts.ValidHeaderFieldValue(l.val)) {
			return false
		}
		switch l.key {
		case "Host":
			continue
		case "Transfer-Encoding", "Expect":
			return false
		}
		vals[i] = l.val
		if vs, ok := hdr[l.key]; ok {
			hdr[l.key] = append(vs, l.val)
		} else {
			hdr[l.key] = vals[i : i+1 : i+1]
		}
	}
	// As net/http does for HTTP/1.0 caches: Pragma: no-cache means Cache-Control: no-cache.
	if p := hdr["Pragma"]; len(p) > 0 && p[0] == "no-cache" {
		if _, ok := hdr["Cache-Control"]; !ok {
			hdr["Cache-Control"] = []string{"no-cache"}
		}
	}
	return true
}

// methodString is the method as a string, without allocating for the
// common ones; "" when it is not a token.
func methodString(m []byte) string {
	switch string(m) {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodPatch:
		return http.MethodPatch
	case http.MethodHead:
		return http.MethodHead
	case http.MethodOptions:
		return http.MethodOptions
	}
	if len(m) == 0 || !httpguts.ValidHeaderFieldName(string(m)) { // a token, as net/http checks it
		return ""
	}
	return string(m)
}

// plainPath reports whether a path has only bytes net/url leaves as they
// are (unreserved, and $&+,/:;=@): its URL is the path itself, no RawPath.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-_.~$&+,/:;=@", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// hasCTL reports whether a request target has a control byte (net/url refuses them).
func hasCTL(b []byte) bool {
	for _, c := range b {
		if c < ' ' || c == 0x7f {
			return true
		}
	}
	return false
}

// serveRequest serves one request and reports whether the connection may
// carry another.
func (fc *serverConn) serveRequest(r *http.Request) bool {
	s := fc.s
	if s.writeTimeout > 0 {
		fc.keepWriteDeadline(s.writeTimeout)
	}
	w := &fc.w
	w.reset(r)
	aborted := fc.run(w, r)
	r.Context().(*reqCtx).cancel(context.Canceled) // as net/http's, when ServeHTTP returns; no watch starts after it
	fc.stopWatch()
	if w.hijacked {
		fc.passed = true
		return false
	}
	if aborted { // the client sees the response cut: what was written goes, then the connection closes
		_ = fc.bw.Flush()
		return false
	}
	keep := w.finish()
	if err := fc.bw.Flush(); err != nil {
		return false
	}
	return keep && fc.body.drain() && !r.Close && !s.closing.Load()
}

// run calls the proxy's ServeHTTP, and reports whether it panicked (the
// forwarder cuts a response with http.ErrAbortHandler; another panic is
// logged, as net/http does).
func (fc *serverConn) run(w *response, r *http.Request) (aborted bool) {
	defer func() {
		if v := recover(); v != nil {
			aborted = true
			if v != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				fc.s.p.log.Error("panic serving a request", "remote", fc.remote, "panic", v, "stack", string(buf))
			}
		}
	}()
	fc.s.p.ServeHTTP(w, r)
	return false
}

// rstAvoidanceDelay is how long a connection closed with a request body
// unread waits, closed for writing only, before it closes: closed at once,
// it would reset the connection, and the client could lose the response
// (net/http's 500 ms).
const rstAvoidanceDelay = 500 * time.Millisecond

// lingerClose closes the connection for writing and waits
// rstAvoidanceDelay, before a close with bytes of the client unread.
func (fc *serverConn) lingerClose() {
	_ = fc.bw.Flush()
	if cw, ok := fc.c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	time.Sleep(rstAvoidanceDelay)
}

// handover passes the connection to the fallback, with consumed (bytes of
// br already read as a request head) and the rest of br before what comes
// from the connection.
func (fc *serverConn) handover(consumed []byte) {
	var read []byte
	if fc.br != nil {
		read = make([]byte, 0, len(consumed)+fc.br.Buffered())
		read = append(read, consumed...)
		b, _ := fc.br.Peek(fc.br.Buffered())
		read = append(read, b...)
	}
	_ = fc.c.SetDeadline(time.Time{}) // the fallback sets its own, or none
	fc.passed = true
	fc.s.forget(fc)
	if fc.br != nil {
		fc.br.Reset(nil)
		serverReaders.Put(fc.br)
		fc.bw.Reset(nil)
		serverWriters.Put(fc.bw)
		fc.br, fc.bw = nil, nil
	}
	var c net.Conn = fc.c
	if len(read) > 0 {
		c = &replayConn{Conn: fc.c, read: read}
	}
	fc.s.handoff.give(c)
}

// keepReadDeadline makes the read deadline of the connection d from now
// (none when d is 0), moving it only when it is more than deadlineSlack
// earlier, or later.
func (fc *serverConn) keepReadDeadline(d time.Duration) {
	if d <= 0 {
		if !fc.rd.IsZero() {
			fc.setReadDeadline(time.Time{})
		}
		return
	}
	t := time.Now().Add(d)
	if fc.rd.IsZero() || fc.rd.After(t) || fc.rd.Before(t.Add(-deadlineSlack)) {
		fc.setReadDeadline(t)
	}
}

func (fc *serverConn) setReadDeadline(t time.Time) {
	fc.rd = t
	_ = fc.c.SetReadDeadline(t)
}

// keepWriteDeadline is keepReadDeadline for writes (a WriteTimeout d > 0).
func (fc *serverConn) keepWriteDeadline(d time.Duration) {
	t := time.Now().Add(d)
	if fc.wd.IsZero() || fc.wd.After(t) || fc.wd.Before(t.Add(-deadlineSlack)) {
		fc.wd = t
		_ = fc.c.SetWriteDeadline(t)
	}
}

// requestBody is the body of a request with a Content-Length, read from the
// connection's buffer. Its remainder is atomic: the forwarder reads a large
// body on a goroutine of its own while the response begins (see commit).
type requestBody struct {
	fc       *serverConn
	left     atomic.Int64
	err      error
	closed   bool
	deadline bool // the read deadline of the body is set
}

func (b *requestBody) reset(n int64) {
	b.left.Store(n)
	b.err, b.closed, b.deadline = nil, false, false
}

// Read reads the body; the client leaving before its end is
// io.ErrUnexpectedEOF. Reading from the connection (past what came with
// the head) sets the read deadline of the whole request (ReadTimeout from
// its start, as net/http's).
func (b *requestBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.err != nil {
		return 0, b.err
	}
	left := b.left.Load()
	if left == 0 {
		return 0, io.EOF
	}
	fc := b.fc
	if fc.br.Buffered() == 0 && !b.deadline {
		b.deadline = true
		var t time.Time
		if fc.s.readTimeout > 0 {
			t = fc.start.Add(fc.s.readTimeout)
		}
		fc.setReadDeadline(t)
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := fc.br.Read(p)
	if b.left.Add(-int64(n)) == 0 {
		fc.bodyEnded()
		return n, nil
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	b.err = err
	return n, err
}

// Close ends reading: the rest is dropped after the response, or the
// connection closed (drain).
func (b *requestBody) Close() error {
	b.closed = true
	return nil
}

// drain reads and drops what the handler left of the body, and reports
// whether the connection may carry another request.
func (b *requestBody) drain() bool {
	left := b.left.Load()
	if left == 0 {
		return b.err == nil
	}
	if b.err != nil || left > maxPostHandlerRead {
		return false
	}
	if !b.deadline {
		b.deadline = true
		b.fc.setReadDeadline(time.Now().Add(max(b.fc.s.readTimeout, 10*time.Second)))
	}
	_, err := b.fc.br.Discard(int(left))
	b.left.Store(0)
	return err == nil
}

// unread is how much of the body is still to come from the client.
func (b *requestBody) unread() int64 { return b.left.Load() }
