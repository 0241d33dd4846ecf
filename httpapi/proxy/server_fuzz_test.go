package proxy

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// FuzzServerRequest feeds arbitrary bytes, as what a client sends, to the
// Server's reading of a request head (readHead, request: fasthttp's parser
// and the loop's own rules). It must never panic, and a request it takes
// must be one net/http reads alike — method, target, path, query, Host,
// header, length, Connection: close — for what is not taken goes to
// net/http, and what is taken must mean the same as there.
func FuzzServerRequest(f *testing.F) {
	for _, seed := range []string{
		"GET /fn/ns/f/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /fn/ns/f/a%2Fb/c?q=1&q=2 HTTP/1.1\r\nHost: app.example\r\nContent-Length: 4\r\nX-Many: 1\r\nX-Many: 2\r\n\r\nbody",
		"GET /async-fn/ns/f HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, close\r\nPragma: no-cache\r\n\r\n",
		"GET /fn/ns/f HTTP/1.1\r\nHost: x\r\nCookie: a=b; c=\"d e\";;\r\nCookie: z=1\r\n\r\n",
		"GET /fn/ns/f HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n",
		"POST /fn/ns/f HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET /fn/ns/f HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
		"get /fn/%zz HTTP/1.1\r\nHost: a b\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fc := &serverConn{s: &Server{}, c: fuzzConn{}, header: http.Header{}, remote: "127.0.0.1:1"}
		fc.br = bufio.NewReaderSize(bytes.NewReader(raw), serverReadBuffer)
		fc.w.fc, fc.body.fc = fc, fc
		fc.head.DisableNormalizing()
		n, err := fc.readHead(true)
		if err != nil || n == 0 {
			return
		}
		r, _ := fc.request(n)
		if r == nil {
			return
		}
		want, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			t.Fatalf("the Server took a request net/http refuses (%v): %q", err, raw)
		}
		delete(want.Header, "Host") // net/http's server does, ReadRequest not
		got := []any{r.Method, r.RequestURI, r.URL.Path, r.URL.EscapedPath(), r.URL.RawQuery, r.Host, r.ContentLength, r.Close, r.Header}
		exp := []any{want.Method, want.RequestURI, want.URL.Path, want.URL.EscapedPath(), want.URL.RawQuery, want.Host, want.ContentLength, want.Close, want.Header}
		for i := range got {
			if !reflect.DeepEqual(got[i], exp[i]) {
				t.Fatalf("%q: the Server read %#v, net/http %#v (of method, target, path, escaped path, query, host, length, close, header)", raw, got[i], exp[i])
			}
		}
	})
}

// fuzzConn is a connection with deadlines and addresses only.
type fuzzConn struct{ net.Conn }

func (fuzzConn) SetDeadline(time.Time) error      { return nil }
func (fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (fuzzConn) SetWriteDeadline(time.Time) error { return nil }
func (fuzzConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (fuzzConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
