package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/slessio/sless/invoke"
)

// The forwarder: an HTTP/1.1 exchange with a function process written and
// read on the handler's goroutine, straight between the incoming request,
// the pooled upstream connection and the response writer. It replaced
// httputil.ReverseProxy and http.Transport, whose request clone, header
// maps, per-request context and goroutine hand-offs were most of the
// proxy's cost (issue 18). What it guarantees:
//
//   - each request is framed afresh (Content-Length; a chunked body was
//     spooled whole before, so its length is known): no byte of the
//     client's framing reaches the function;
//   - hop-by-hop headers, those the Connection header names, and the
//     client's Forwarded and X-Forwarded-* (unless from a trusted proxy)
//     are not passed, either way;
//   - a bodiless request that fails on a reused connection before any
//     answer is sent again on a new one; a connection refused is the
//     function stopped behind the proxy's back, which is woken again;
//   - the function's timeout is a deadline on the connection, and the
//     client leaving sets a past one: either unblocks any read or write;
//   - the response body is copied as it arrives, flushed to the client
//     whenever the function pauses (Server-Sent Events, long polls);
//   - 101 Switching Protocols hands both connections to a byte copy.

// forward sends r to the function at c.target and copies its answer to w.
// A failure before the answer began is answered (upstreamError); after, the
// response is cut (see cut).
func (p *Proxy) forward(w *recorder, r *http.Request, c *call) {
	ctx := r.Context()
	rewoken := false
	for {
		h := p.up.host(c.target.Host)
		if err := h.reserve(ctx, c.deadline); err != nil {
			p.upstreamError(w, r, c, err)
			return
		}
		pc := h.take(time.Now(), p.up.idleFor, c.src != nil)
		reused := pc != nil
		for {
			if pc == nil {
				var err error
				if pc, err = p.up.dial(ctx, c.target, c.deadline); err != nil {
					<-h.sem
					if !rewoken && p.refused(ctx, err) {
						rewoken = true
						if p.rewakeFor(ctx, c) {
							break // to the new endpoint
						}
					}
					p.upstreamError(w, r, c, err)
					return
				}
			}
			reuse, err := p.exchange(w, r, c, pc)
			switch {
			case err == nil && reuse:
				h.put(pc)
				return
			case err == nil:
				h.drop(pc)
				return
			}
			pc.c.Close()
			if w.status != 0 {
				<-h.sem
				c.cut(r, err)
			}
			if reused && c.src == nil && ctx.Err() == nil && stale(r.Method, err) {
				pc, reused = nil, false // a keep-alive connection the function had closed: once more on a new one
				continue
			}
			<-h.sem
			p.upstreamError(w, r, c, err)
			return
		}
	}
}

// refused reports whether a dial error means nothing listens at the
// endpoint any more (the process was stopped or restarted behind the
// proxy's back) and the function can be woken again.
func (p *Proxy) refused(ctx context.Context, err error) bool {
	var op *net.OpError
	return p.cfg.Scaler != nil && ctx.Err() == nil && errors.As(err, &op) && op.Op == "dial" &&
		!errors.Is(err, os.ErrDeadlineExceeded)
}

// rewakeFor wakes c's function again after its endpoint refused the
// connection, and points c at the new endpoint.
func (p *Proxy) rewakeFor(ctx context.Context, c *call) bool {
	p.log.Info("function endpoint refused a connection; starting it again", "function", c.e.key.String(), "endpoint", c.target.Host)
	var began time.Time
	if c.span != nil {
		began = time.Now()
	}
	in, cold, err := p.rewake(ctx, c.e, c.inst)
	c.inst = in // nil: the count on the failed one ended in rewake
	if cold {
		c.span.coldStart(ctx, began, err)
	}
	if err != nil {
		return false
	}
	c.cold, c.target = true, in.url
	return true
}

// exchange sends r on pc and copies the answer to w. It reports whether pc
// may carry another request; err is a failure (before anything was written
// to w when w.status is still 0).
func (p *Proxy) exchange(w *recorder, r *http.Request, c *call, pc *upConn) (reuse bool, err error) {
	pc.deadline = c.deadline
	if c.bodyLen > syncBodyMax {
		pc.setDeadline(c.deadline) // the body's writer and the answer's reader run at once, watched from the start
	} else {
		// Reads begin in await, which sets their deadline; writes come first.
		_ = pc.keepWriteDeadline(c.deadline)
	}
	c.up, c.ctx = pc, r.Context()
	defer func() {
		if c.unwatch != nil && !c.unwatch() { // the client left: the connection's deadline is spent
			reuse = false
		}
		c.up, c.ctx, c.unwatch = nil, nil, nil
	}()
	p.writeHead(pc.bw, r, c)
	var wrote chan error // the body writer's outcome, when it runs apart
	switch {
	case c.src == nil:
		if err := pc.bw.Flush(); err != nil {
			return false, headWriteError{err}
		}
	case c.bodyLen <= syncBodyMax:
		if err := c.sendBody(pc.bw); err != nil {
			return false, err
		}
	default:
		c.watch() // from the start: the writer's past deadline must stay
		wrote = make(chan error, 1)
		go func() {
			err := c.sendBody(pc.bw)
			if err != nil {
				pc.stop() // the function waits for the rest: stop reading its answer
			}
			wrote <- err
		}()
	}
	reuse, err = p.answer(w, r, c, pc)
	if wrote != nil {
		select {
		case werr := <-wrote:
			if werr != nil {
				reuse = false
				if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
					err = werr // the body could not be read: say that, not the deadline it set
				}
			}
		default: // answered before taking the whole body: stop sending it
			pc.stop()
			<-wrote
			reuse = false
		}
	}
	return reuse, err
}

// sendBody writes c's body after the head and flushes both. A body that
// came chunked goes on chunked, as one chunk: it was spooled whole.
func (c *call) sendBody(bw *bufio.Writer) error {
	if c.chunked {
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), c.bodyLen, 16))
		bw.WriteString("\r\n")
	}
	n, err := bw.ReadFrom(c)
	c.bytesIn = n
	if err != nil {
		return err
	}
	if n != c.bodyLen {
		return &bodyReadError{io.ErrUnexpectedEOF}
	}
	if c.chunked {
		bw.WriteString("\r\n0\r\n\r\n")
	}
	return bw.Flush()
}

// bodyReadError is a request body that could not be read from the client.
type bodyReadError struct{ error }

func (e *bodyReadError) Unwrap() error { return e.error }

// writeHead writes the request line and headers of r for the function.
func (p *Proxy) writeHead(bw *bufio.Writer, r *http.Request, c *call) {
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	bw.WriteString(c.path)
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		bw.WriteByte('?')
		bw.WriteString(r.URL.RawQuery)
	}
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	if c.target.Scheme == unixScheme {
		bw.WriteString("localhost") // a socket has no host name
	} else {
		bw.WriteString(c.target.Host)
	}
	bw.WriteString("\r\n")
	connection := r.Header["Connection"]
	traced := c.span != nil
	for k, vs := range r.Header {
		if !passRequestHeader(k) || listed(connection, k) || traced && c.span.replaces(k) {
			continue
		}
		if c.owner && (k == "Authorization" || k == "Cookie") {
			continue // the owner's credentials of the platform: they authorised this call
		}
		for _, v := range vs {
			if k == "Authorization" && p.cfg.PlatformToken != nil && p.cfg.PlatformToken(v) {
				continue
			}
			writeHeader(bw, k, v)
		}
	}
	if httpguts.HeaderValuesContainsToken(r.Header["Te"], "trailers") {
		bw.WriteString("Te: trailers\r\n")
	}
	if up := r.Header.Get("Upgrade"); up != "" && httpguts.HeaderValuesContainsToken(connection, "upgrade") {
		bw.WriteString("Connection: Upgrade\r\n")
		writeHeader(bw, "Upgrade", up)
	}
	if traced { // the proxy span's trace context, in place of the caller's
		c.span.writeTo(r.Context(), bw)
	}
	p.writeForwarded(bw, r)
	writeHeader(bw, PrefixHeader, c.prefix)
	writeHeader(bw, InvocationHeader, c.idText)
	if c.attempt > 0 { // an asynchronous invocation: its id stays the same across attempts
		writeHeader(bw, invoke.AsyncIDHeader, c.asyncID.String())
		writeHeader(bw, invoke.AttemptHeader, strconv.Itoa(c.attempt))
	}
	switch {
	case c.chunked:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	case c.src != nil:
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), c.bodyLen, 10))
		bw.WriteString("\r\n")
	case r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch:
		bw.WriteString("Content-Length: 0\r\n")
	}
	bw.WriteString("\r\n")
}

// writeForwarded writes X-Forwarded-For, -Host and -Proto: from the
// connection, and from a trusted proxy its chain (extended with its own
// address), its Host, and its Proto when that is http or https.
func (p *Proxy) writeForwarded(bw *bufio.Writer, r *http.Request) {
	trusted := p.trusted(r.RemoteAddr)
	bw.WriteString("X-Forwarded-For: ")
	if trusted {
		for _, v := range r.Header["X-Forwarded-For"] {
			bw.WriteString(v)
			bw.WriteString(", ")
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		bw.WriteString(host)
	}
	bw.WriteString("\r\n")
	host := r.Host
	proto := "http"
	if r.TLS != nil {
		proto = "https"
	}
	if trusted {
		if v := r.Header.Get("X-Forwarded-Proto"); v == "http" || v == "https" {
			proto = v
		}
		if v := r.Header.Get("X-Forwarded-Host"); v != "" {
			host = v
		}
	}
	writeHeader(bw, "X-Forwarded-Host", host)
	writeHeader(bw, "X-Forwarded-Proto", proto)
}

func writeHeader(bw *bufio.Writer, k, v string) {
	bw.WriteString(k)
	bw.WriteString(": ")
	bw.WriteString(v)
	bw.WriteString("\r\n")
}

// passRequestHeader reports whether a header of the client goes on to the
// function. Hop-by-hop headers stop here (RFC 9110 §7.6.1); the framing,
// Host, the forwarding headers and the proxy's own are written afresh; the
// proxy answered Expect itself when it read the body.
func passRequestHeader(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te",
		"Trailer", "Transfer-Encoding", "Upgrade", "Content-Length", "Host", "Expect",
		"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", PrefixHeader, InvocationHeader,
		invoke.AsyncIDHeader, invoke.AttemptHeader:
		return false
	}
	return true
}

// passResponseHeader reports whether a header of the function goes on to
// the client: not hop-by-hop, not the framing (the server frames the
// response itself), not the proxy's own. Trailer passes (RFC 9110 makes it
// end to end): announced trailers make the server send the response
// chunked, with them at its end (copyChunked).
func passResponseHeader(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te",
		"Transfer-Encoding", "Upgrade", LogHeader, InvocationHeader, ErrorHeader:
		return false
	}
	return true
}

// listed reports whether the header k is named by a Connection header.
func listed(connection []string, k string) bool {
	return len(connection) > 0 && httpguts.HeaderValuesContainsToken(connection, k)
}

// respHead is what the forwarder needs of a response head.
type respHead struct {
	status  int
	length  int64 // Content-Length; -1: none
	chunked bool
	close   bool // the function closes the connection after this response
}

// maxHeadBytes bounds a response head, as http.Transport's default does.
const maxHeadBytes = 1 << 20

// errBadResponse is an answer of a function that is not HTTP/1.x.
var errBadResponse = errors.New("malformed HTTP response")

// answer reads the function's response and copies it to w.
func (p *Proxy) answer(w *recorder, r *http.Request, c *call, pc *upConn) (bool, error) {
	hd, err := readHead(pc, c)
	if err != nil {
		return false, err
	}
	if hd.status == http.StatusSwitchingProtocols {
		return false, c.upgrade(w, pc)
	}
	hdr := w.Header()
	vals := make([]string, len(pc.seen.lines))
	for i, l := range pc.seen.lines {
		if !passResponseHeader(l.key) || listed(pc.seen.connection, l.key) || hd.chunked && l.key == "Content-Length" {
			continue
		}
		vals[i] = l.val
		if vs, ok := hdr[l.key]; ok {
			hdr[l.key] = append(vs, l.val)
		} else {
			hdr[l.key] = vals[i : i+1 : i+1]
		}
	}
	w.WriteHeader(hd.status)
	if r.Method == http.MethodHead || hd.status == http.StatusNoContent || hd.status == http.StatusNotModified {
		return !hd.close, nil
	}
	switch {
	case hd.chunked:
		err = c.copyChunked(w)
	case hd.length >= 0:
		err = c.copyN(w, hd.length)
	default: // until the function closes the connection
		err = c.copyN(w, -1)
		if err == io.EOF {
			return false, nil
		}
	}
	return err == nil && !hd.close, err
}

// readHead reads the head of the final response, passing over 1xx
// informational ones (but not 101), its header lines into pc.seen.
func readHead(pc *upConn, c *call) (respHead, error) {
	// A connection closed before any byte must read as plain EOF (stale).
	if err := c.await(); err != nil {
		return respHead{}, err
	}
	for {
		hd, err := readOneHead(pc, c)
		if err != nil || hd.status >= 200 || hd.status == http.StatusSwitchingProtocols {
			return hd, err
		}
	}
}

func readOneHead(pc *upConn, c *call) (respHead, error) {
	hd := respHead{length: -1}
	line, err := pc.br.ReadSlice('\n')
	if err != nil {
		return hd, unexpected(err)
	}
	// HTTP/1.x SSS[ reason]
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return hd, errBadResponse
	}
	http10 := line[7] == '0'
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return hd, errBadResponse
		}
		hd.status = hd.status*10 + int(d-'0')
	}
	if hd.status < 100 {
		return hd, errBadResponse
	}
	s := &pc.seen
	s.start()
	keepAlive := false
	size := len(line)
	for {
		line, err := pc.br.ReadSlice('\n')
		if err != nil {
			return hd, unexpected(err)
		}
		if size += len(line); size > maxHeadBytes {
			return hd, errBadResponse
		}
		line = trimEOL(line)
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			return hd, errBadResponse
		}
		l, same := s.add(k, bytes.TrimSpace(v))
		if !same && !httpguts.ValidHeaderFieldName(l.raw) {
			return hd, errBadResponse // also obs-fold, and space before the colon
		}
		switch l.key {
		case "Content-Length":
			n, err := strconv.ParseInt(l.val, 10, 64)
			if err != nil || n < 0 || hd.length >= 0 && hd.length != n {
				return hd, errBadResponse
			}
			hd.length = n
		case "Transfer-Encoding":
			hd.chunked = httpguts.HeaderValuesContainsToken([]string{l.val}, "chunked")
		case "Connection":
			s.connection = append(s.connection, l.val)
			hd.close = hd.close || httpguts.HeaderValuesContainsToken([]string{l.val}, "close")
			keepAlive = keepAlive || httpguts.HeaderValuesContainsToken([]string{l.val}, "keep-alive")
		case LogHeader:
			if hd.status >= 200 && c.log == "" {
				c.log = l.val
			}
		}
	}
	if hd.chunked {
		hd.length = -1
	}
	if http10 && !keepAlive {
		hd.close = true
	}
	return hd, nil
}

// unexpected turns an end of file inside a response head into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// headerCache holds the header lines of the last response read on a
// connection, as strings: a function answers the same headers, mostly with
// the same values, every time, and a line equal to the one before at its
// place reuses its strings instead of allocating them again.
type headerCache struct {
	lines      []headerLine
	prev       []headerLine
	connection []string // Connection values of the current response
}

type headerLine struct {
	raw string // the name as the function sent it
	key string // canonical
	val string
}

// start begins a new response: its lines are compared with the last one's.
func (s *headerCache) start() {
	s.prev, s.lines = s.lines, s.prev[:0]
	s.connection = s.connection[:0]
}

// add adds a line, and reports whether it is the last response's line at
// its place (one whose name and value were checked then).
func (s *headerCache) add(k, v []byte) (headerLine, bool) {
	i := len(s.lines)
	var l headerLine
	same := false
	if i < len(s.prev) && s.prev[i].raw == string(k) {
		l.raw, l.key = s.prev[i].raw, s.prev[i].key
		if s.prev[i].val == string(v) {
			l.val, same = s.prev[i].val, true
		}
	} else {
		l.raw = string(k)
		l.key = http.CanonicalHeaderKey(l.raw)
	}
	if l.val == "" && len(v) > 0 {
		l.val = string(v)
	}
	s.lines = append(s.lines, l)
	return l, same
}

// copyN copies n bytes of a response body (n < 0: until end of file, which
// it returns) from br to w, flushing w whenever the function pauses.
func (c *call) copyN(w *recorder, n int64) error {
	br := c.up.br
	for n != 0 {
		if br.Buffered() == 0 {
			w.flush()
			if err := c.await(); err != nil {
				if n > 0 {
					return unexpected(err)
				}
				return err
			}
		}
		b, _ := br.Peek(br.Buffered())
		if n > 0 && int64(len(b)) > n {
			b = b[:n]
		}
		m, err := w.Write(b)
		br.Discard(m)
		if n > 0 {
			n -= int64(m)
		}
		if err != nil {
			return &clientWriteError{err}
		}
	}
	return nil
}

// copyChunked copies a chunked response body from br to w, and its
// trailers, which the server sends as its own.
func (c *call) copyChunked(w *recorder) error {
	br := c.up.br
	for {
		if br.Buffered() == 0 {
			w.flush() // the function pauses: the client gets what came so far
			if err := c.await(); err != nil {
				return unexpected(err)
			}
		}
		line, err := br.ReadSlice('\n')
		if err != nil {
			return unexpected(err)
		}
		line = trimEOL(line)
		if i := bytes.IndexByte(line, ';'); i >= 0 { // chunk extensions
			line = line[:i]
		}
		size, err := strconv.ParseUint(string(bytes.TrimSpace(line)), 16, 63)
		if err != nil {
			return errBadResponse
		}
		if size == 0 {
			return readTrailers(w, br)
		}
		if err := c.copyN(w, int64(size)); err != nil {
			return err
		}
		if line, err = br.ReadSlice('\n'); err != nil || len(trimEOL(line)) != 0 {
			return errBadResponse
		}
	}
}

func readTrailers(w *recorder, br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return unexpected(err)
		}
		line = trimEOL(line)
		if len(line) == 0 {
			return nil
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok || !httpguts.ValidHeaderFieldName(string(k)) {
			return errBadResponse
		}
		key := http.CanonicalHeaderKey(string(k))
		if passResponseHeader(key) && key != "Content-Length" {
			w.Header().Add(http.TrailerPrefix+key, string(bytes.TrimSpace(v)))
		}
	}
}

// clientWriteError is a failure to write the response to the client.
type clientWriteError struct{ error }

func (e *clientWriteError) Unwrap() error { return e.error }

// upgrade finishes a 101 Switching Protocols: the client's connection is
// taken from the server, the head passed on, and bytes copied both ways
// until either side closes (or the function's timeout).
func (c *call) upgrade(w *recorder, pc *upConn) error {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return err
	}
	defer conn.Close()
	pc.setDeadline(c.deadline) // both ways, the function's timeout
	c.status = http.StatusSwitchingProtocols
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	for _, l := range pc.seen.lines {
		if l.key != LogHeader && l.key != InvocationHeader && l.key != ErrorHeader {
			writeHeader(brw.Writer, l.raw, l.val)
		}
	}
	writeHeader(brw.Writer, InvocationHeader, c.idText)
	brw.WriteString("\r\n")
	if err := brw.Flush(); err != nil {
		return nil // the client is gone; the record says 101 all the same
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(pc.c, brw.Reader) // what the client sent after its head first
		pc.stop()
	}()
	n, _ := io.Copy(conn, pc.br)
	w.bytes += n
	_ = conn.SetDeadline(aLongTimeAgo)
	<-done
	return nil
}

// quickAnswer is how long the forwarder waits for a function's bytes before
// it watches for the client leaving: most requests are answered sooner, and
// the watch (context.AfterFunc) would cost a request more than the rest of
// the exchange allocates.
const quickAnswer = 20 * time.Millisecond

// await waits for the function's next bytes on c.up, until c's deadline or
// the client leaving (watched once the wait is longer than quickAnswer).
//
// The wait of up to quickAnswer is a probe: a read deadline of its own. A
// probe's deadline still quickAnswer/2 or more away (the last request's on
// this connection) is used as it is, and it stays set after the bytes came
// (upConn.Read moves it to c's deadline if a later read meets it): most
// requests on a busy connection set no deadline at all.
func (c *call) await() error {
	pc := c.up
	if pc.br.Buffered() > 0 {
		return nil
	}
	if c.unwatch == nil {
		now := time.Now()
		if quick := now.Add(quickAnswer); quick.Before(c.deadline) {
			if pc.rd.Before(now.Add(quickAnswer/2)) || pc.rd.After(quick) {
				_ = pc.setReadDeadline(quick)
			}
			pc.probing = true
			_, err := pc.br.Peek(1)
			pc.probing = false
			if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
				return err
			}
		}
		_ = pc.setReadDeadline(c.deadline)
		c.watch()
	}
	_, err := pc.br.Peek(1)
	return err
}

// watch makes the client leaving end the exchange: a past deadline on the
// connection unblocks any read or write on it.
func (c *call) watch() {
	if c.unwatch == nil {
		pc := c.up
		c.unwatch = context.AfterFunc(c.ctx, pc.stop)
	}
}

// cut ends a response the function did not finish, or the client did not
// take: the client must see it broken, not complete, so the handler aborts
// (http.ErrAbortHandler), and finish records why.
func (c *call) cut(r *http.Request, err error) {
	var cw *clientWriteError
	switch {
	case !time.Now().Before(c.deadline):
		c.errText = timeoutError(c.timeout).Error() + " (while sending the response)"
	case errors.As(err, &cw) || r.Context().Err() != nil:
		c.errText = "the client went away during the response"
	default:
		c.errText = "the response was cut off: " + err.Error()
	}
	panic(http.ErrAbortHandler)
}

// timedOut reports whether err ends an exchange past the function's timeout.
func (c *call) timedOut(err error) bool {
	return errors.Is(err, errTimeout) || errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(c.deadline)
}
