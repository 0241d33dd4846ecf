package proxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// bufferBeforeChunking is how much of a body without a Content-Length is
// held before the head is written: a handler that returns before writing
// more gets a Content-Length, a longer body goes chunked (net/http's 2 KiB).
const bufferBeforeChunking = 2 << 10

// response is the http.ResponseWriter of a request on a Server's
// connection, written to the connection's buffer. It frames a response as
// net/http's does: the head goes at the first write past
// bufferBeforeChunking, a Flush, or when the handler returns; the
// Content-Length the handler set, else the length of a body that ended
// before its head went, else chunked, with the trailers the handler
// announced (Trailer) or added (http.TrailerPrefix) at its end. A missing
// Content-Type is sniffed, Date added, and a body shorter than its
// Content-Length closes the connection. Header changes between WriteHeader
// and the first write count, where net/http takes the header at
// WriteHeader: the proxy makes none.
type response struct {
	fc      *serverConn
	r       *http.Request
	header  http.Header
	status  int
	length  int64 // Content-Length of the body; -1: not set (yet)
	written int64 // body bytes the handler wrote
	pending []byte
	err     error // the connection failed

	wroteHeader, committed, chunked, head, closeAfter, hijacked bool
}

func (w *response) reset(r *http.Request) {
	hdr := w.header
	if hdr == nil {
		hdr = http.Header{}
	} else {
		clear(hdr)
	}
	*w = response{fc: w.fc, r: r, header: hdr, pending: w.pending[:0], length: -1, head: r.Method == http.MethodHead}
}

func (w *response) Header() http.Header { return w.header }

// WriteHeader sends an informational status (1xx but 101) at once, and
// notes a final one.
func (w *response) WriteHeader(code int) {
	if w.hijacked || w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code)) // as net/http
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.wroteHeader, w.status = true, code
	if vs := w.header["Content-Length"]; len(vs) > 0 {
		if n, err := strconv.ParseInt(vs[0], 10, 64); err == nil && n >= 0 {
			w.length = n
		} else {
			delete(w.header, "Content-Length")
		}
	}
}

func (w *response) Write(p []byte) (int, error) {
	switch {
	case w.hijacked:
		return 0, http.ErrHijacked
	case !w.wroteHeader:
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.head {
		return len(p), nil
	}
	if w.err != nil {
		return 0, w.err
	}
	if !w.committed {
		if w.length < 0 && len(w.pending)+len(p) <= bufferBeforeChunking {
			w.pending = append(w.pending, p...)
			return len(p), nil
		}
		w.commit(false, p)
	}
	w.writeBody(p)
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// Flush sends what the response has so far (its head first: chunked when
// its length is not known).
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush, with the connection's error (http.ResponseController).
func (w *response) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false, nil)
	}
	if err := w.fc.bw.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}

// Hijack gives the handler the connection, with what the client sent after
// the head (and what the response has, flushed), without deadlines: the
// connection is the handler's from now on.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	fc := w.fc
	if w.wroteHeader {
		if !w.committed {
			w.commit(false, nil)
		}
		if err := fc.bw.Flush(); err != nil {
			return nil, nil, err
		}
	}
	w.hijacked = true
	fc.stopWatch()
	fc.rd, fc.wd = time.Time{}, time.Time{}
	_ = fc.c.SetDeadline(time.Time{})
	return fc.c, bufio.NewReadWriter(fc.br, fc.bw), nil
}

// finish ends the response after its handler returned: its head if none
// went yet, the last chunk and the trailers. It reports whether the
// connection may carry another request.
func (w *response) finish() bool {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(true, nil)
	}
	bw := w.fc.bw
	if w.chunked {
		bw.WriteString("0\r\n")
		w.writeTrailers()
		bw.WriteString("\r\n")
	}
	if w.length >= 0 && w.written < w.length && bodyAllowed(w.status) && !w.head {
		return false // the client must see the body short
	}
	return w.err == nil && !w.closeAfter
}

// commit writes the head. done: the handler has returned; next: the
// write that makes the head go, for a Content-Type sniffed from it.
func (w *response) commit(done bool, next []byte) {
	w.committed = true
	fc := w.fc
	bw := fc.bw
	h := w.header
	code := w.status
	allowed := bodyAllowed(code)
	w.closeAfter = w.r.Close || fc.s.closing.Load() || fc.body.unread() > maxPostHandlerRead ||
		httpguts.HeaderValuesContainsToken(h["Connection"], "close")
	writeStatusLine(bw, code)
	trailers := len(h["Trailer"]) > 0
	for k, vs := range h {
		switch {
		case strings.HasPrefix(k, http.TrailerPrefix):
			trailers = true
			continue
		case k == "Content-Length" || k == "Transfer-Encoding" || k == "Connection" ||
			!allowed && k == "Content-Type" && code == http.StatusNotModified || !httpguts.ValidHeaderFieldName(k):
			continue
		}
		for _, v := range vs {
			writeCleanHeader(bw, k, v)
		}
	}
	switch {
	case !allowed:
		w.length = -1
	case w.length >= 0:
	case w.head:
		if done && w.written > 0 {
			w.length = w.written
		}
	case done && !trailers:
		w.length = int64(len(w.pending))
	default:
		w.chunked = true
	}
	switch {
	case w.chunked:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	case w.length >= 0:
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), w.length, 10))
		bw.WriteString("\r\n")
	}
	if _, ok := h["Date"]; !ok {
		bw.WriteString(dateLine())
	}
	if _, ok := h["Content-Type"]; !ok && allowed {
		sniff := w.pending
		if len(sniff) == 0 {
			sniff = next
		}
		if len(sniff) > 0 {
			writeHeader(bw, "Content-Type", http.DetectContentType(sniff[:min(len(sniff), 512)]))
		}
	}
	if w.closeAfter {
		bw.WriteString("Connection: close\r\n")
	}
	bw.WriteString("\r\n")
	if len(w.pending) > 0 && !w.head {
		w.writeBody(w.pending)
	}
	w.pending = w.pending[:0]
}

// writeBody writes body bytes after the head, as a chunk when chunked.
func (w *response) writeBody(p []byte) {
	bw := w.fc.bw
	var err error
	if w.chunked {
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(len(p)), 16))
		bw.WriteString("\r\n")
		bw.Write(p)
		_, err = bw.WriteString("\r\n")
	} else {
		_, err = bw.Write(p)
	}
	if err != nil && w.err == nil {
		w.err = err
	}
}

// writeTrailers writes the trailers at the end of a chunked body: the
// fields with http.TrailerPrefix, and the values of those the Trailer
// header announced.
func (w *response) writeTrailers() {
	bw := w.fc.bw
	for k, vs := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok && httpguts.ValidHeaderFieldName(name) {
			for _, v := range vs {
				writeCleanHeader(bw, name, v)
			}
		}
	}
	for _, decl := range w.header["Trailer"] {
		for _, k := range strings.Split(decl, ",") {
			k = http.CanonicalHeaderKey(strings.TrimSpace(k))
			switch k {
			case "", "Transfer-Encoding", "Content-Length", "Trailer":
				continue
			}
			for _, v := range w.header[k] {
				writeCleanHeader(bw, k, v)
			}
		}
	}
}

// writeInformational sends a 1xx head (103 Early Hints) with the header so far.
func (w *response) writeInformational(code int) {
	if w.committed {
		return
	}
	bw := w.fc.bw
	writeStatusLine(bw, code)
	for k, vs := range w.header {
		if httpguts.ValidHeaderFieldName(k) && !strings.HasPrefix(k, http.TrailerPrefix) {
			for _, v := range vs {
				writeCleanHeader(bw, k, v)
			}
		}
	}
	bw.WriteString("\r\n")
	if err := bw.Flush(); err != nil && w.err == nil {
		w.err = err
	}
}

// bodyAllowed reports whether a response of status may have a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

func writeStatusLine(bw *bufio.Writer, code int) {
	if code < len(statusLines) {
		bw.WriteString(statusLines[code])
		return
	}
	bw.WriteString(statusLine(code))
}

// statusLines are the status lines of the codes below 600, made once.
var statusLines = func() []string {
	lines := make([]string, 600)
	for code := 100; code < len(lines); code++ {
		lines[code] = statusLine(code)
	}
	return lines
}()

func statusLine(code int) string {
	text := http.StatusText(code)
	if text == "" {
		text = "status code " + strconv.Itoa(code)
	}
	return "HTTP/1.1 " + strconv.Itoa(code) + " " + text + "\r\n"
}

// writeCleanHeader writes a header line with its value as net/http does:
// line breaks become spaces, and the space around it goes.
func writeCleanHeader(bw *bufio.Writer, k, v string) {
	if strings.IndexByte(v, '\n') >= 0 || strings.IndexByte(v, '\r') >= 0 {
		v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
	}
	if len(v) > 0 && (isOWS(v[0]) || isOWS(v[len(v)-1])) {
		v = strings.Trim(v, " \t")
	}
	writeHeader(bw, k, v)
}

func isOWS(b byte) bool { return b == ' ' || b == '\t' }

// dateLine is the Date header line of now, formatted once a second.
func dateLine() string {
	now := time.Now()
	if d := lastDate.Load(); d != nil && d.sec == now.Unix() {
		return d.line
	}
	d := &date{sec: now.Unix(), line: "Date: " + now.UTC().Format(http.TimeFormat) + "\r\n"}
	lastDate.Store(d)
	return d.line
}

type date struct {
	sec  int64
	line string
}

var lastDate atomic.Pointer[date]
