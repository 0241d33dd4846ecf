package runtimes_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/runtimes"
)

// fixture is what differs between the runtimes in the conformance suite: the names of
// the sample's language-specific types and files. The behaviour table is shared.
type fixture struct {
	runtime    string
	entrypoint string
	missing    string // an entrypoint naming no function of the sample
	raiseType  string // "type" of the error answered by /raise
	panicType  string // "type" of the error answered by /panic
	source     string // the sample's file, which a traceback names
	broken     string // in the load failure of testdata/<runtime>/broken
	// loadsWhileListening: Python serves 503 while it imports the user code; Node.js
	// listens first but a synchronous require holds its event loop, and a Go
	// program's package init runs before main.
	loadsWhileListening bool
}

var fixtures = []fixture{
	{
		runtime: "python3.11", entrypoint: "handler.handle", missing: "handler.missing",
		raiseType: "ValueError", panicType: "RuntimeError", source: "handler.py",
		broken: "SyntaxError", loadsWhileListening: true,
	},
	{
		runtime: "nodejs20", entrypoint: "handler.handle", missing: "handler.missing",
		raiseType: "TypeError", panicType: "Error", source: "handler.js",
		broken: "SyntaxError",
	},
	{
		runtime: "go1.23", entrypoint: "Handle", missing: "Missing",
		raiseType: "*errors.errorString", panicType: "panic", source: "handler.go",
		broken: "undefined: notDefined",
	},
}

// exchange is one request's answer, with X-Sless-Log decoded.
type exchange struct {
	status int
	header http.Header
	body   []byte
	log    string
	hasLog bool
}

func (e exchange) event(t *testing.T) map[string]any {
	t.Helper()
	var event map[string]any
	if err := json.Unmarshal(e.body, &event); err != nil {
		t.Fatalf("body is not a JSON object: %v: %.200q", err, e.body)
	}
	return event
}

func send(t *testing.T, c *http.Client, req *http.Request) exchange {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	got := exchange{status: resp.StatusCode, header: resp.Header, body: body}
	if v := resp.Header.Get("X-Sless-Log"); v != "" {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatalf("X-Sless-Log is not base64: %v", err)
		}
		got.log, got.hasLog = string(raw), true
	}
	return got
}

func get(t *testing.T, url string) exchange {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return send(t, client, req)
}

// serverCase is one row of the server-mode table.
type serverCase struct {
	name    string
	method  string
	target  string
	header  http.Header
	body    func() io.Reader // nil: no body
	chunked bool
	status  int
	ctype   string // Content-Type the response must have
	check   func(t *testing.T, fx fixture, got exchange)
}

// binaryBody holds every byte value: not UTF-8.
var binaryBody = func() []byte {
	b := make([]byte, 512)
	for i := range b {
		b[i] = byte(255 - i%256)
	}
	return b
}()

func text(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }

func wantBody(want string) func(*testing.T, fixture, exchange) {
	return func(t *testing.T, _ fixture, got exchange) {
		if string(got.body) != want {
			t.Errorf("body = %q, want %q", got.body, want)
		}
	}
}

func wantEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

const (
	jsonType = "application/json"
	htmlType = "text/html; charset=utf-8"
	textType = "text/plain; charset=utf-8"
	fiveMiB  = 5 << 20
)

var serverCases = []serverCase{
	{
		name: "json_object_body", method: "POST", target: "/echo",
		header: http.Header{"Content-Type": {"application/json"}},
		body:   text(`{"name": "sless", "n": 2, "_method": "spoofed"}`),
		status: 200, ctype: jsonType,
		check: func(t *testing.T, _ fixture, got exchange) {
			event := got.event(t)
			wantEqual(t, "name", event["name"], "sless")
			wantEqual(t, "n", event["n"], 2.0)
			wantEqual(t, "_method", event["_method"], "POST") // the wrapper's keys win
			wantEqual(t, "_path", event["_path"], "/echo")
			if _, ok := event["body"]; ok {
				t.Errorf("a JSON object body must not also arrive as body: %v", event)
			}
		},
	},
	{
		name: "json_array_body_is_text", method: "POST", target: "/echo",
		header: http.Header{"Content-Type": {"application/json"}}, body: text(`[1, 2]`),
		status: 200, ctype: jsonType,
		check: func(t *testing.T, _ fixture, got exchange) {
			wantEqual(t, "body", got.event(t)["body"], "[1, 2]")
		},
	},
	{
		name: "form_body", method: "POST", target: "/echo",
		header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, body: text("title=a+b&x=1"),
		status: 200, ctype: jsonType,
		check: func(t *testing.T, _ fixture, got exchange) {
			event := got.event(t)
			wantEqual(t, "body", event["body"], "title=a+b&x=1")
			wantEqual(t, "_headers.content-type", event["_headers"].(map[string]any)["content-type"], "application/x-www-form-urlencoded")
		},
	},
	{
		// A body that is not UTF-8 text (an image, a zip) arrives intact, in
		// base64, marked by _body_base64; text stays text.
		name: "binary_body_is_base64", method: "POST", target: "/echo",
		header: http.Header{"Content-Type": {"application/octet-stream"}}, body: func() io.Reader { return bytes.NewReader(binaryBody) },
		status: 200, ctype: jsonType,
		check: func(t *testing.T, _ fixture, got exchange) {
			event := got.event(t)
			wantEqual(t, "_body_base64", event["_body_base64"], true)
			wantEqual(t, "body", event["body"], base64.StdEncoding.EncodeToString(binaryBody))
		},
	},
	{
		name: "no_body", method: "GET", target: "/echo",
		status: 200, ctype: jsonType,
		check: func(t *testing.T, _ fixture, got exchange) {
			event := got.event(t)
			wantEqual(t, "_method", event["_method"], "GET")
			wantEqual(t, "_query", event["_query"], map[string]any{})
			if _, ok := event["body"]; ok {
				t.Errorf("no body must give no body key: %v", event)
			}
		},
	},
	{
		name: "empty_body", method: "POST", target: "/echo",
		status: 200, ctype: jsonType,
		check: func(t *testing.T, _ fixture, got exchange) {
			event := got.event(t)
			wantEqual(t, "content-length", event["_headers"].(map[string]any)["content-length"], "0")
			if _, ok := event["body"]; ok {
				t.Errorf("an empty body must give no body key: %v", event)
			}
		},
	},
	{
		name: "large_body_with_content_length", method: "POST", target: "/size",
		body:   func() io.Reader { return bytes.NewReader(bytes.Repeat([]byte("x"), fiveMiB)) },
		status: 200, ctype: jsonType,
		check: func(t *testing.T, _ fixture, got exchange) {
			wantEqual(t, "length", got.event(t)["length"], float64(fiveMiB))
		},
	},
	{
		name: "chunked_text_body", method: "POST", target: "/size", chunked: true,
		body:   func() io.Reader { return bytes.NewReader(bytes.Repeat([]byte("y"), 300_000)) },
		status: 200, ctype: jsonType,
		check: func(t *testing.T, _ fixture, got exchange) {
			wantEqual(t, "length", got.event(t)["length"], 300_000.0)
		},
	},
	{
		name: "chunked_json_body", method: "PUT", target: "/echo", chunked: true,
		header: http.Header{"Content-Type": {"application/json"}}, body: text(`{"k": "v"}`),
		status: 200, ctype: jsonType,
		check: func(t *testing.T, _ fixture, got exchange) {
			event := got.event(t)
			wantEqual(t, "k", event["k"], "v")
			wantEqual(t, "_method", event["_method"], "PUT")
			wantEqual(t, "transfer-encoding", event["_headers"].(map[string]any)["transfer-encoding"], "chunked")
		},
	},
	{
		name: "query_with_repeated_keys", method: "GET", target: "/echo?a=1&b=2&b=3&c=&d=x+y%21",
		status: 200, ctype: jsonType,
		check: func(t *testing.T, _ fixture, got exchange) {
			event := got.event(t)
			wantEqual(t, "_query", event["_query"], map[string]any{"a": "1", "b": []any{"2", "3"}, "c": "", "d": "x y!"})
			wantEqual(t, "_path", event["_path"], "/echo")
		},
	},
	{
		name: "headers", method: "GET", target: "/echo",
		header: http.Header{"X-Test": {"a"}, "X-Multi": {"1", "2"}, "Accept": {"text/html"}},
		status: 200, ctype: jsonType,
		check: func(t *testing.T, _ fixture, got exchange) {
			event := got.event(t)
			headers := event["_headers"].(map[string]any)
			wantEqual(t, "x-test", headers["x-test"], "a")
			wantEqual(t, "x-multi", headers["x-multi"], "1, 2")
			wantEqual(t, "accept", headers["accept"], "text/html")
			wantEqual(t, "_accept", event["_accept"], "text/html")
			if host, _ := headers["host"].(string); !strings.HasPrefix(host, "127.0.0.1:") {
				t.Errorf("host = %q", host)
			}
			for name := range headers {
				if name != strings.ToLower(name) {
					t.Errorf("header name %q is not lower case", name)
				}
			}
		},
	},
	{
		name: "object", method: "GET", target: "/", status: 200, ctype: jsonType,
		check: func(t *testing.T, fx fixture, got exchange) {
			wantBody(`{"ok":true}`)(t, fx, got)
			if got.hasLog {
				t.Errorf("a function that printed nothing sent X-Sless-Log %q", got.log)
			}
		},
	},
	{name: "list", method: "GET", target: "/list", status: 200, ctype: jsonType, check: wantBody(`[1,"two",null]`)},
	{name: "number", method: "GET", target: "/number", status: 200, ctype: jsonType, check: wantBody(`42`)},
	{name: "bool", method: "GET", target: "/bool", status: 200, ctype: jsonType, check: wantBody(`true`)},
	{name: "null", method: "GET", target: "/null", status: 200, ctype: jsonType, check: wantBody(`null`)},
	{name: "html_string", method: "GET", target: "/html", status: 200, ctype: htmlType, check: wantBody("  <h1>hi</h1>")},
	{name: "text_string", method: "GET", target: "/text", status: 200, ctype: textType, check: wantBody("héllo ✓")},
	{name: "head", method: "HEAD", target: "/text", status: 200, ctype: textType, check: wantBody("")},
	{
		name: "status_code_with_json_body", method: "POST", target: "/status", status: 201, ctype: jsonType,
		check: func(t *testing.T, fx fixture, got exchange) {
			wantBody(`{"created":true}`)(t, fx, got)
			wantEqual(t, "X-Custom", got.header.Get("X-Custom"), "yes")
		},
	},
	{name: "status_code_with_text_body", method: "GET", target: "/status-text", status: 404, ctype: textType, check: wantBody("not here")},
	{name: "status_code_with_own_content_type", method: "GET", target: "/status-ctype", status: 200, ctype: "text/csv", check: wantBody("a,b\n")},
	{
		name: "exception", method: "GET", target: "/raise", status: 500, ctype: jsonType,
		check: func(t *testing.T, fx fixture, got exchange) {
			wantEqual(t, "error", got.event(t), map[string]any{"error": "boom", "type": fx.raiseType})
			if !strings.Contains(got.log, "boom") {
				t.Errorf("log %q does not hold the error", got.log)
			}
		},
	},
	{
		name: "exception_traceback_only_in_log", method: "GET", target: "/panic", status: 500, ctype: jsonType,
		check: func(t *testing.T, fx fixture, got exchange) {
			wantEqual(t, "error", got.event(t), map[string]any{"error": "kaboom", "type": fx.panicType})
			if !strings.Contains(got.log, fx.source) {
				t.Errorf("log holds no traceback naming %s:\n%s", fx.source, got.log)
			}
		},
	},
	{
		name: "log_capped", method: "GET", target: "/big-log", status: 200, ctype: textType,
		check: func(t *testing.T, _ fixture, got exchange) {
			if len(got.log) > runtimes.LogCap || len(got.log) < runtimes.LogCap-8 {
				t.Errorf("log is %d bytes, want just under %d", len(got.log), runtimes.LogCap)
			}
			if !utf8.ValidString(got.log) {
				t.Error("log is not valid UTF-8")
			}
			if !strings.HasPrefix(got.log, strings.Repeat("é", 30)+" 0\n") || !strings.HasSuffix(got.log, runtimes.LogTruncatedMarker) {
				t.Errorf("log does not keep the start and end with the marker: %q ... %q", got.log[:40], got.log[len(got.log)-40:])
			}
		},
	},
	{
		name: "health", method: "GET", target: "/_sless/health", status: 200, ctype: jsonType,
		check: func(t *testing.T, _ fixture, got exchange) {
			wantEqual(t, "status", got.event(t)["status"], "ok")
		},
	},
}

// TestConformance runs one behaviour table against every runtime's wrapper, each a
// real process (python3, node, a go-built binary), served on a loopback port (PORT)
// and again on an inherited Unix socket (SLESS_LISTEN_FD).
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, fx := range fixtures {
		t.Run(fx.runtime, func(t *testing.T) {
			t.Parallel()
			t.Run("server", func(t *testing.T) { t.Parallel(); testServer(t, fx, startProcess) })
			t.Run("server_listen_fd", func(t *testing.T) { t.Parallel(); testServer(t, fx, startOnUnixSocket) })
			t.Run("listen_fd_invalid", func(t *testing.T) { t.Parallel(); testListenFDInvalid(t, fx) })
			t.Run("health_while_loading", func(t *testing.T) { t.Parallel(); testHealthWhileLoading(t, fx) })
			t.Run("load_failure", func(t *testing.T) { t.Parallel(); testLoadFailure(t, fx) })
			t.Run("check", func(t *testing.T) { t.Parallel(); testCheck(t, fx) })
			t.Run("job", func(t *testing.T) { t.Parallel(); testJob(t, fx) })
			t.Run("sigterm_as_pid_1", func(t *testing.T) { t.Parallel(); testSigtermAsPID1(t, fx) })
		})
	}
}

// testServer runs the server table against a wrapper started by startServer:
// startProcess (PORT) or startOnUnixSocket (SLESS_LISTEN_FD).
func testServer(t *testing.T, fx fixture, startServer func(testing.TB, runtimes.Spec, ...string) *process) {
	dir := mustPrepare(t, fx.runtime, "handler", fx.entrypoint)
	p := startServer(t, mustCommand(t, fx.runtime, dir, runtimes.ModeServer), entry(fx.entrypoint))
	p.waitReady(t)

	t.Run("cases", func(t *testing.T) {
		for _, c := range serverCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				var body io.Reader
				if c.body != nil {
					body = c.body()
				}
				if c.chunked {
					body = io.MultiReader(body) // hides the length from net/http
				}
				req, err := http.NewRequest(c.method, p.url+c.target, body)
				if err != nil {
					t.Fatal(err)
				}
				for name, values := range c.header {
					req.Header[name] = values
				}
				if c.chunked {
					req.ContentLength = -1
				}
				got := send(t, p.client, req)
				if got.status != c.status {
					t.Errorf("status = %d, want %d; body %.300q", got.status, c.status, got.body)
				}
				if ct := got.header.Get("Content-Type"); ct != c.ctype {
					t.Errorf("Content-Type = %q, want %q", ct, c.ctype)
				}
				if bytes.Contains(got.body, []byte(fx.source)) || bytes.Contains(got.body, []byte("Traceback")) {
					t.Errorf("body leaks a traceback: %.300q", got.body)
				}
				c.check(t, fx, got)
			})
		}
	})

	t.Run("concurrent_logs_do_not_mix", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := p.client.Get(fmt.Sprintf("%s/log?id=%d", p.url, i))
				if err != nil {
					t.Errorf("request %d: %v", i, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				log, _ := base64.StdEncoding.DecodeString(resp.Header.Get("X-Sless-Log"))
				want := fmt.Sprintf("start %d\nmiddle %d\nend %d\n", i, i, i)
				if resp.StatusCode != http.StatusOK || string(log) != want {
					t.Errorf("request %d: status %d, log %q, want %q", i, resp.StatusCode, log, want)
				}
			}()
		}
		wg.Wait()
	})

	// On a port the wrapper listens on TCP; on an inherited socket it must not (it may
	// have no network to listen in): this also proves the check sees listeners.
	t.Run("tcp_listeners", func(t *testing.T) {
		addrs, ok := tcpListeners(p.cmd.Process.Pid)
		if !ok {
			t.Skip("no /proc to read sockets from")
		}
		if inherited := p.socketInode != ""; inherited && len(addrs) > 0 {
			t.Errorf("serving on an inherited socket, the wrapper listens on TCP too: %v", addrs)
		} else if !inherited && len(addrs) != 1 {
			t.Errorf("serving on PORT, the wrapper holds TCP listeners %v, want one", addrs)
		}
	})

	// A child process the function starts must not get the listening socket: it could
	// accept the proxy's connections, or hold the socket open after the wrapper ends.
	t.Run("listener_closed_on_exec", func(t *testing.T) {
		if p.socketInode == "" {
			t.Skip("listens on PORT")
		}
		sockets, ok := processSockets(p.cmd.Process.Pid)
		if !ok {
			t.Skip("no /proc to read sockets from")
		}
		fds := sockets[p.socketInode]
		if len(fds) == 0 {
			t.Fatalf("the process holds no descriptor of the socket it serves on")
		}
		for _, fd := range fds {
			if !closedOnExec(t, p.cmd.Process.Pid, fd) {
				t.Errorf("descriptor %s of the listening socket is passed on to child processes", fd)
			}
		}
	})

	t.Run("output_outside_requests_goes_to_stdout", func(t *testing.T) {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(p.stdout.String(), "sample loaded\n") {
			if time.Now().After(deadline) {
				t.Fatalf("load-time output missing from the process's stdout: %q", p.stdout.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// testListenFDInvalid: a SLESS_LISTEN_FD that is not a number or not a listening stream
// socket ends the process non-zero with one line on stderr, as a port it cannot listen
// on does; it never falls back to PORT.
func testListenFDInvalid(t *testing.T, fx fixture) {
	cases := []struct {
		name, value string
		file        func(t *testing.T) *os.File // descriptor 3, if any
		want        string
	}{
		{name: "not_a_number", value: "three", want: "SLESS_LISTEN_FD"},
		{name: "negative", value: "-1", want: "SLESS_LISTEN_FD"},
		{name: "not_open", value: "999", want: "fd 999"},
		{name: "not_a_socket", value: "3", file: func(t *testing.T) *os.File {
			f, err := os.Open(filepath.Join("testdata", fx.runtime, "handler", fx.source))
			if err != nil {
				t.Fatal(err)
			}
			return f
		}, want: "fd 3"},
		{name: "connected_socket", value: "3", file: func(t *testing.T) *os.File {
			fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			peer := os.NewFile(uintptr(fds[1]), "peer")
			t.Cleanup(func() { _ = peer.Close() })
			return os.NewFile(uintptr(fds[0]), "connected")
		}, want: "fd 3"},
		{name: "datagram_socket", value: "3", file: func(t *testing.T) *os.File {
			conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			f, err := conn.File()
			if err != nil {
				t.Fatal(err)
			}
			return f
		}, want: "fd 3"},
	}
	dir := mustPrepare(t, fx.runtime, "handler", fx.entrypoint)
	spec := mustCommand(t, fx.runtime, dir, runtimes.ModeServer)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var file *os.File
			if c.file != nil {
				file = c.file(t)
			}
			p := startWithFile(t, spec, file, entry(fx.entrypoint), runtimes.EnvListenFD+"="+c.value)
			if code := p.waitExit(t); code == 0 {
				t.Errorf("exit code 0, want non-zero")
			}
			stderr := p.stderr.String()
			if !strings.HasPrefix(stderr, "sless: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
				t.Errorf("stderr = %q, want one line \"sless: ...\" naming %q", stderr, c.want)
			}
		})
	}
}

// testHealthWhileLoading: health is 200 only once the code is loaded, and anything
// that answers before then answers 503.
func testHealthWhileLoading(t *testing.T, fx fixture) {
	const delay = 1500 * time.Millisecond
	dir := mustPrepare(t, fx.runtime, "handler", fx.entrypoint)
	p := startProcess(t, mustCommand(t, fx.runtime, dir, runtimes.ModeServer),
		entry(fx.entrypoint), fmt.Sprintf("SAMPLE_LOAD_DELAY_MS=%d", delay.Milliseconds()))
	saw503 := false
	for {
		status := p.health()
		if status == http.StatusOK {
			break
		}
		switch status {
		case 0:
		case http.StatusServiceUnavailable:
			if !saw503 {
				saw503 = true
				if got := get(t, p.url+"/"); got.status != http.StatusServiceUnavailable {
					t.Errorf("a request while loading answered %d, want 503", got.status)
				}
			}
		default:
			t.Fatalf("health answered %d while loading", status)
		}
		if p.hasExited() || time.Since(p.started) > time.Minute {
			t.Fatalf("never became healthy; stderr:\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if took := time.Since(p.started); took < delay {
		t.Errorf("healthy after %v, before the %v load finished", took, delay)
	}
	if fx.loadsWhileListening && !saw503 {
		t.Error("health never answered 503 while the code loaded")
	}
}

// testLoadFailure: code that cannot load fails the build (Go) or ends the process
// non-zero with the reason on stderr, before it is ever healthy.
func testLoadFailure(t *testing.T, fx fixture) {
	cases := []struct {
		name, sample, entrypoint, env, want string
	}{
		{"exception_at_load", "handler", fx.entrypoint, "SAMPLE_FAIL_LOAD=1", "load failed on purpose"},
		{"broken_code", "broken", fx.entrypoint, "", fx.broken},
		{"missing_entrypoint", "handler", fx.missing, "", fx.missing[strings.LastIndex(fx.missing, ".")+1:]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir, log, err := prepare(t, fx.runtime, c.sample, c.entrypoint)
			message := log
			if err == nil {
				p := startProcess(t, mustCommand(t, fx.runtime, dir, runtimes.ModeServer), entry(c.entrypoint), c.env)
				if code := p.waitExit(t); code == 0 {
					t.Errorf("exit code 0, want non-zero")
				}
				message = p.stderr.String()
			} else if !strings.Contains(err.Error(), c.want) {
				t.Errorf("build error does not carry the compiler output %q: %v", c.want, err)
			}
			if !strings.Contains(message, c.want) {
				t.Errorf("failure output does not say %q:\n%s", c.want, message)
			}
		})
	}
}

// testCheck: Check finds every load failure at build time, with the same
// reason a starting process gives, and passes code that loads. (Go: Build
// already compiled the entrypoint in, so Check has nothing to do.)
func testCheck(t *testing.T, fx fixture) {
	if fx.runtime == "go1.23" {
		t.Skip("Go has no load check: Build compiles the entrypoint in (see testLoadFailure)")
	}
	rt := mustLookup(t, fx.runtime)
	cases := []struct {
		name, sample, entrypoint, env, want string
	}{
		{"loads", "handler", fx.entrypoint, "", ""},
		{"exception_at_load", "handler", fx.entrypoint, "SAMPLE_FAIL_LOAD=1", "load failed on purpose"},
		{"broken_code", "broken", fx.entrypoint, "", fx.broken},
		{"missing_entrypoint", "handler", fx.missing, "", fx.missing[strings.LastIndex(fx.missing, ".")+1:]},
		{"missing_module", "handler", "nothere." + fx.entrypoint[strings.LastIndex(fx.entrypoint, ".")+1:], "", "nothere"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir, _, err := prepare(t, fx.runtime, c.sample, c.entrypoint)
			if err != nil {
				t.Fatal(err)
			}
			env := []string{entry(c.entrypoint)}
			if c.env != "" {
				env = append(env, c.env)
			}
			out, err := rt.Check(context.Background(), dir, runtimes.BuildOptions{Env: env})
			switch {
			case c.want == "":
				if err != nil {
					t.Fatalf("Check: %v\n%s", err, out)
				}
			case err == nil:
				t.Fatalf("Check passed code that cannot load; output:\n%s", out)
			default:
				testutil.RequireCode(t, err, domain.EUNPROCESSABLE)
				if !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Check error does not say %q: %v", c.want, err)
				}
			}
		})
	}
}

// entry is the SLESS_ENTRYPOINT setting a driver passes with every process.
func entry(entrypoint string) string { return "SLESS_ENTRYPOINT=" + entrypoint }

func testJob(t *testing.T, fx fixture) {
	dir := mustPrepare(t, fx.runtime, "handler", fx.entrypoint)
	spec := mustCommand(t, fx.runtime, dir, runtimes.ModeJob)
	decode := func(t *testing.T, line string) any {
		t.Helper()
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("last line is not JSON: %q", line)
		}
		return v
	}

	t.Run("result_is_last_line", func(t *testing.T) {
		t.Parallel()
		got := runJob(t, spec, entry(fx.entrypoint), `SLESS_EVENT={"_path": "/job", "n": 7}`)
		if got.code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", got.code, got.stderr)
		}
		want := map[string]any{"event": map[string]any{"_path": "/job", "n": 7.0}, "done": true}
		wantEqual(t, "result", decode(t, lastLine(t, got.stdout)), want)
		if !strings.Contains(got.stdout, "\npartial\n") {
			t.Errorf("the function's output does not come before the result on its own line: %q", got.stdout)
		}
	})
	t.Run("empty_event", func(t *testing.T) {
		t.Parallel()
		got := runJob(t, spec, entry(fx.entrypoint), "SLESS_EVENT=")
		if got.code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", got.code, got.stderr)
		}
		wantEqual(t, "result", decode(t, lastLine(t, got.stdout)), map[string]any{"ok": true})
	})
	t.Run("exception", func(t *testing.T) {
		t.Parallel()
		got := runJob(t, spec, entry(fx.entrypoint), `SLESS_EVENT={"_path": "/raise"}`)
		if got.code != 1 || !strings.Contains(got.stderr, "boom") {
			t.Errorf("exit %d, stderr %q; want 1 with the error", got.code, got.stderr)
		}
	})
	t.Run("traceback_on_stderr", func(t *testing.T) {
		t.Parallel()
		got := runJob(t, spec, entry(fx.entrypoint), `SLESS_EVENT={"_path": "/panic"}`)
		if got.code != 1 || !strings.Contains(got.stderr, "kaboom") || !strings.Contains(got.stderr, fx.source) {
			t.Errorf("exit %d, stderr %q; want 1 with a traceback naming %s", got.code, got.stderr, fx.source)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		got := runJob(t, spec, entry(fx.entrypoint), `SLESS_EVENT={"_path": "/sleep"}`, "SLESS_TIMEOUT_SEC=1")
		if got.code != 124 || !strings.Contains(got.stderr, "timed out after 1 seconds") {
			t.Errorf("exit %d, stderr %q; want 124 with the timeout message", got.code, got.stderr)
		}
		if got.took > 20*time.Second {
			t.Errorf("took %v to time out after 1 s", got.took)
		}
	})
	t.Run("invalid_event", func(t *testing.T) {
		t.Parallel()
		got := runJob(t, spec, entry(fx.entrypoint), "SLESS_EVENT=[1, 2]")
		if got.code != 1 || !strings.Contains(got.stderr, "SLESS_EVENT") {
			t.Errorf("exit %d, stderr %q; want 1 naming SLESS_EVENT", got.code, got.stderr)
		}
	})
	t.Run("load_failure", func(t *testing.T) {
		t.Parallel()
		got := runJob(t, spec, entry(fx.entrypoint), "SAMPLE_FAIL_LOAD=1")
		if got.code == 0 || !strings.Contains(got.stderr, "load failed on purpose") {
			t.Errorf("exit %d, stderr %q; want non-zero with the reason", got.code, got.stderr)
		}
	})
}

// testSigtermAsPID1 runs the wrapper as the first process of a PID namespace,
// as in a container, where a signal with no handler is ignored: SIGTERM must
// still end a server at once (exit 0, although a keep-alive connection of
// the proxy stays open) and a job (143; Go's runtime: 2), not leave a
// stopped pod to wait for its grace period and a kill.
func testSigtermAsPID1(t *testing.T, fx fixture) {
	if os.Geteuid() != 0 {
		t.Skip("a PID namespace of its own needs root") // CI runs as root
	}
	dir := mustPrepare(t, fx.runtime, "handler", fx.entrypoint)
	asPID1 := func(spec runtimes.Spec) runtimes.Spec {
		spec.Args = append([]string{"--pid", "--fork", "--kill-child", "--", spec.Path}, spec.Args...)
		spec.Path = "/usr/bin/unshare"
		return spec
	}
	// first is the wrapper: the only child of unshare.
	first := func(p *process) int {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.cmd.Process.Pid, p.cmd.Process.Pid))
			if f := strings.Fields(string(data)); len(f) == 1 {
				pid, _ := strconv.Atoi(f[0])
				return pid
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("unshare started no process")
		return 0
	}
	t.Run("server", func(t *testing.T) {
		p := startProcess(t, asPID1(mustCommand(t, fx.runtime, dir, runtimes.ModeServer)), entry(fx.entrypoint))
		p.waitReady(t)
		// A keep-alive connection stays open in the client's pool.
		if resp, err := p.client.Get(p.url + "/"); err != nil {
			t.Fatal(err)
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		stopped := time.Now()
		if err := syscall.Kill(first(p), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p.waitExit(t); code != 0 {
			t.Errorf("exit code %d after SIGTERM, want 0", code)
		}
		if took := time.Since(stopped); took > 5*time.Second {
			t.Errorf("SIGTERM ended the server after %s", took)
		}
	})
	t.Run("job", func(t *testing.T) {
		p := startProcess(t, asPID1(mustCommand(t, fx.runtime, dir, runtimes.ModeJob)), entry(fx.entrypoint), runtimes.EnvEvent+`={"_path": "/sleep"}`)
		time.Sleep(time.Second)
		if err := syscall.Kill(first(p), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p.waitExit(t); code != 143 && !(fx.runtime == "go1.23" && code == 2) {
			t.Errorf("exit code %d after SIGTERM, want 143", code)
		}
	})
}
