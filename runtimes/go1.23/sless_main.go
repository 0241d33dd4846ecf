//go:build ignore

// This file is the sless Go runtime wrapper. runtimes.Install copies it, without the
// build constraint above, into the user's package main and generates
// sless_entrypoint.go, which binds slessEntrypoint to the configured function; the
// result builds into one binary that serves HTTP or runs one job (SLESS_MODE).
// The contract is documented in runtimes/doc.go and shared with the Python and
// Node.js wrappers. Every identifier starts with "sless" so that none collides with
// the user's, and the code keeps to Go 1.18 syntax because a user's go.mod sets the
// language version of every file in the package.
//
// Environment: PORT (8080), SLESS_HOST (all interfaces), SLESS_LISTEN_FD (an inherited,
// already-listening stream socket to serve on instead of binding SLESS_HOST:PORT),
// SLESS_MODE (server | job | check), SLESS_EVENT (job input, JSON object),
// SLESS_TIMEOUT_SEC (job time limit; exit 124 when it passes). The entrypoint is
// compiled in: SLESS_ENTRYPOINT is not read.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// slessFunc is the signature of a user function.
type slessFunc = func(ctx context.Context, event map[string]any) (any, error)

const (
	slessHealthPath = "/_sless/health"
	slessLogHeader  = "X-Sless-Log"
	slessLogCap     = 16 << 10
	slessLogMarker  = "\n[sless: log truncated]\n"
	slessJSON       = "application/json"
	slessHTML       = "text/html; charset=utf-8"
	slessText       = "text/plain; charset=utf-8"
)

// slessStdout and slessStderr are the process's own output on duplicated descriptors:
// while an invocation runs, descriptors 1 and 2 point at its capture instead.
var slessStdout, slessStderr *os.File

func main() {
	slessStdout, slessStderr = slessDupFile(1, "stdout"), slessDupFile(2, "stderr")
	switch mode := os.Getenv("SLESS_MODE"); mode {
	case "", "server":
		os.Exit(slessServe())
	case "job":
		os.Exit(slessRunJob())
	case "check": // the entrypoint is compiled in: loading it is running the package's init
		os.Exit(0)
	default:
		fmt.Fprintf(slessStderr, "sless: SLESS_MODE must be server, job or check, got %q\n", mode)
		os.Exit(2)
	}
}

func slessDupFile(fd int, name string) *os.File {
	dup, err := syscall.Dup(fd)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sless: dup %s: %v\n", name, err)
		os.Exit(1)
	}
	syscall.CloseOnExec(dup)
	return os.NewFile(uintptr(dup), name)
}

// slessPanic is the error of a function that panicked.
type slessPanic struct{ value any }

func (p *slessPanic) Error() string { return fmt.Sprint(p.value) }

// slessGuard runs f, which calls user code (the function, or a MarshalJSON method
// while encoding its result); a panic becomes an error and its stack goes to standard
// error, which is the invocation's log in server mode.
func slessGuard(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(os.Stderr, "panic: %v\n\n%s", v, debug.Stack())
			err = &slessPanic{value: v}
		}
	}()
	return f()
}

func slessTypeName(err error) string {
	var p *slessPanic
	if errors.As(err, &p) {
		return "panic"
	}
	return fmt.Sprintf("%T", err)
}

func slessServe() int {
	ln, err := slessListen()
	if err != nil {
		fmt.Fprintf(slessStderr, "sless: %v\n", err)
		return 1
	}
	capture, err := os.CreateTemp("", "sless-log-*")
	if err == nil {
		_ = os.Remove(capture.Name()) // only the descriptor is needed
	} else {
		fmt.Fprintf(slessStderr, "sless: per-invocation logs are off: %v\n", err)
	}
	srv := &http.Server{
		Handler:           &slessServer{capture: capture},
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          log.New(slessStderr, "sless: ", 0),
	}
	// SIGTERM (a pod or a process being stopped): take no new connections,
	// let the requests in flight finish, exit 0.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	stopped := make(chan struct{})
	go func() {
		<-stop
		_ = srv.Shutdown(context.Background())
		close(stopped)
	}()
	err = srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-stopped
		return 0
	}
	fmt.Fprintf(slessStderr, "sless: %v\n", err)
	return 1
}

// slessListen returns the server's listener: the inherited, already-listening socket
// SLESS_LISTEN_FD (TCP or Unix) when that is set, else a new one on SLESS_HOST:PORT.
func slessListen() (net.Listener, error) {
	text := os.Getenv("SLESS_LISTEN_FD")
	if text == "" {
		ln, err := net.Listen("tcp", net.JoinHostPort(os.Getenv("SLESS_HOST"), slessGetenv("PORT", "8080")))
		if err != nil {
			return nil, fmt.Errorf("cannot listen: %v", err)
		}
		return ln, nil
	}
	fd, err := strconv.ParseUint(text, 10, 31)
	if err != nil {
		return nil, fmt.Errorf("SLESS_LISTEN_FD must be a file descriptor number, got %q", text)
	}
	if err := slessCheckListening(int(fd)); err != nil {
		return nil, fmt.Errorf("cannot listen on fd %d: %v", fd, err)
	}
	f := os.NewFile(uintptr(fd), "sless-listener")
	defer f.Close() // FileListener holds a duplicate
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on fd %d: %v", fd, err)
	}
	return ln, nil
}

// slessCheckListening returns an error unless fd is a listening stream socket:
// net.FileListener also takes a socket that is not listening (Accept would then fail
// with a bare "invalid argument") and a Unix SOCK_SEQPACKET one.
func slessCheckListening(fd int) error {
	kind, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE)
	if err != nil {
		return err
	}
	listening, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN)
	if err != nil {
		return err
	}
	if kind != syscall.SOCK_STREAM || listening == 0 {
		return errors.New("not a listening stream socket")
	}
	return nil
}

// slessServer serves the function. Invocations run one at a time: descriptors 1 and 2
// are process-wide, and redirecting them to a capture for the length of a call is the
// only way to give each request exactly its own fmt, log and os.Stdout output.
type slessServer struct {
	mu      sync.Mutex
	capture *os.File // nil when no temporary file could be made: logs are not captured
}

func (s *slessServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == slessHealthPath {
		slessSend(w, http.StatusOK, http.Header{"Content-Type": {slessJSON}}, []byte(`{"status":"ok"}`), "")
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		slessSend(w, http.StatusBadRequest, http.Header{"Content-Type": {slessJSON}}, []byte(`{"error":"unreadable request body","type":"BadRequest"}`), "")
		return
	}
	status, header, body, logs := s.invoke(r.Context(), slessEvent(r, raw))
	slessSend(w, status, header, body, logs)
}

func (s *slessServer) invoke(ctx context.Context, event map[string]any) (status int, header http.Header, body []byte, logs string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redirect(true)
	err := slessGuard(func() error {
		result, err := slessEntrypoint(ctx, event)
		if err == nil {
			status, header, body, err = slessRender(result)
		}
		return err
	})
	if err != nil {
		if slessTypeName(err) != "panic" { // a panic's stack is in the log already
			fmt.Fprintf(os.Stderr, "error: %v\n", err)
		}
		status, header, body = slessFailure(err)
	}
	s.redirect(false)
	return status, header, body, s.collect()
}

func (s *slessServer) redirect(on bool) {
	if s.capture == nil {
		return
	}
	out, errOut := int(slessStdout.Fd()), int(slessStderr.Fd())
	if on {
		out, errOut = int(s.capture.Fd()), int(s.capture.Fd())
	}
	if err := slessDup2(out, 1); err != nil {
		fmt.Fprintf(slessStderr, "sless: redirect stdout: %v\n", err)
	}
	if err := slessDup2(errOut, 2); err != nil {
		fmt.Fprintf(slessStderr, "sless: redirect stderr: %v\n", err)
	}
	// While descriptor 2 points at a capture, a crash (say in a goroutine the
	// function started) must also reach the real stderr; outside a capture
	// descriptor 2 is the real stderr already, and a second copy would
	// interleave with the first.
	if on {
		_ = debug.SetCrashOutput(slessStderr, debug.CrashOptions{})
	} else {
		_ = debug.SetCrashOutput(nil, debug.CrashOptions{})
	}
}

// collect returns the X-Sless-Log value of the invocation that just ended and empties
// the capture for the next one.
func (s *slessServer) collect() string {
	if s.capture == nil {
		return ""
	}
	size, err := s.capture.Seek(0, io.SeekCurrent)
	if err != nil || size == 0 {
		return ""
	}
	n := size
	if n > slessLogCap {
		n = slessLogCap
	}
	data := make([]byte, n)
	n2, _ := s.capture.ReadAt(data, 0)
	_ = s.capture.Truncate(0)
	_, _ = s.capture.Seek(0, io.SeekStart)
	return slessLogValue(data[:n2], size > slessLogCap)
}

// slessLogValue encodes captured output: valid UTF-8, at most slessLogCap bytes with
// the truncation marker, base64.
func slessLogValue(data []byte, over bool) string {
	data = bytes.ToValidUTF8(data, []byte("\uFFFD"))
	if over || len(data) > slessLogCap {
		cut := slessLogCap - len(slessLogMarker)
		if cut > len(data) { // invalid bytes collapsed into few replacement characters
			cut = len(data)
		}
		for cut > 0 && cut < len(data) && data[cut]&0xC0 == 0x80 { // never split a character
			cut--
		}
		data = append(data[:cut:cut], slessLogMarker...)
	}
	if len(data) == 0 {
		return ""
	}
	return base64.StdEncoding.EncodeToString(data)
}

// slessEvent builds the event of one request: a JSON object body, or {"body": text}
// (a body that is not UTF-8: {"body": base64, "_body_base64": true}), plus the _ keys. Values are what json.Unmarshal would produce, as in job mode.
func slessEvent(r *http.Request, raw []byte) map[string]any {
	var event map[string]any
	if trimmed := bytes.TrimLeft(raw, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		if json.Unmarshal(raw, &event) != nil {
			event = nil
		}
	}
	if event == nil {
		event = map[string]any{}
		switch {
		case len(raw) == 0:
		case utf8.Valid(raw):
			event["body"] = string(raw)
		default:
			event["body"] = base64.StdEncoding.EncodeToString(raw)
			event["_body_base64"] = true
		}
	}
	headers := map[string]any{}
	for name, values := range r.Header {
		headers[strings.ToLower(name)] = strings.Join(values, ", ")
	}
	// net/http moves these out of the header map; the other runtimes show them.
	headers["host"] = r.Host
	if len(r.TransferEncoding) > 0 {
		headers["transfer-encoding"] = strings.Join(r.TransferEncoding, ", ")
	}
	query := map[string]any{}
	values, _ := url.ParseQuery(r.URL.RawQuery)
	for key, vs := range values {
		if len(vs) == 1 {
			query[key] = vs[0]
			continue
		}
		list := make([]any, len(vs))
		for i, v := range vs {
			list[i] = v
		}
		query[key] = list
	}
	accept, _ := headers["accept"].(string)
	event["_method"] = r.Method
	event["_path"] = r.URL.EscapedPath()
	event["_query"] = query
	event["_headers"] = headers
	event["_accept"] = accept
	return event
}

// slessEncode returns the content type and bytes of a plain return value.
func slessEncode(value any) (string, []byte, error) {
	if s, ok := value.(string); ok {
		if strings.HasPrefix(strings.TrimLeftFunc(s, unicode.IsSpace), "<") {
			return slessHTML, []byte(s), nil
		}
		return slessText, []byte(s), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err != nil {
		return "", nil, err
	}
	return slessJSON, bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// slessRender turns a return value into a response; a map with "statusCode" sets
// status, headers and body itself.
func slessRender(result any) (int, http.Header, []byte, error) {
	m, ok := result.(map[string]any)
	if _, full := m["statusCode"]; !ok || !full {
		ctype, body, err := slessEncode(result)
		return http.StatusOK, http.Header{"Content-Type": {ctype}}, body, err
	}
	status, ok := slessStatus(m["statusCode"])
	if !ok {
		return 0, nil, nil, fmt.Errorf("statusCode must be an integer from 100 to 599, got %v", m["statusCode"])
	}
	header := http.Header{}
	err := slessEachHeader(m["headers"], func(name, value string) error {
		if strings.ContainsAny(value, "\r\n") {
			return fmt.Errorf("header %s: value contains a line break", name)
		}
		if name == "" || strings.ContainsAny(name, " \t\r\n:\"(),/;<=>?@[\\]{}") {
			return fmt.Errorf("invalid header name %q", name)
		}
		switch strings.ToLower(name) {
		case "content-length", "transfer-encoding", "connection", strings.ToLower(slessLogHeader):
			return nil // computed by the wrapper
		}
		header.Add(name, value)
		return nil
	})
	if err != nil {
		return 0, nil, nil, err
	}
	if m["body"] == nil {
		return status, header, nil, nil
	}
	ctype, body, err := slessEncode(m["body"])
	if err != nil {
		return 0, nil, nil, err
	}
	if header.Get("Content-Type") == "" {
		header.Set("Content-Type", ctype)
	}
	return status, header, body, nil
}

func slessStatus(v any) (int, bool) {
	var n float64
	switch x := v.(type) {
	case int:
		n = float64(x)
	case int32:
		n = float64(x)
	case int64:
		n = float64(x)
	case float64:
		n = x
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return 0, false
		}
		n = f
	default:
		return 0, false
	}
	if n != math.Trunc(n) || n < 100 || n > 599 {
		return 0, false
	}
	return int(n), true
}

func slessEachHeader(headers any, add func(name, value string) error) error {
	switch h := headers.(type) {
	case nil:
		return nil
	case map[string]string:
		for name, value := range h {
			if err := add(name, value); err != nil {
				return err
			}
		}
	case http.Header:
		for name, values := range h {
			for _, value := range values {
				if err := add(name, value); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		for name, value := range h {
			list, ok := value.([]any)
			if !ok {
				list = []any{value}
			}
			if strs, ok := value.([]string); ok {
				list = make([]any, len(strs))
				for i, s := range strs {
					list[i] = s
				}
			}
			for _, item := range list {
				if err := add(name, fmt.Sprint(item)); err != nil {
					return err
				}
			}
		}
	default:
		return fmt.Errorf("headers must be a map of strings, got %T", headers)
	}
	return nil
}

func slessFailure(err error) (int, http.Header, []byte) {
	body, _ := json.Marshal(map[string]string{"error": err.Error(), "type": slessTypeName(err)})
	return http.StatusInternalServerError, http.Header{"Content-Type": {slessJSON}}, body
}

func slessSend(w http.ResponseWriter, status int, header http.Header, body []byte, logs string) {
	h := w.Header()
	for name, values := range header {
		h[name] = values
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if logs != "" {
		h.Set(slessLogHeader, logs)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// slessRunJob calls the function once; its JSON result is the last line of stdout.
func slessRunJob() int {
	ctx := context.Background()
	if seconds, err := strconv.ParseFloat(os.Getenv("SLESS_TIMEOUT_SEC"), 64); err == nil && seconds > 0 {
		timeout := time.Duration(seconds * float64(time.Second))
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
		time.AfterFunc(timeout, func() {
			fmt.Fprintf(slessStderr, "sless: timed out after %g seconds\n", seconds)
			os.Exit(124)
		})
	}
	event := map[string]any{}
	if text := os.Getenv("SLESS_EVENT"); strings.TrimSpace(text) != "" {
		if err := json.Unmarshal([]byte(text), &event); err != nil || event == nil {
			fmt.Fprintf(slessStderr, "sless: SLESS_EVENT: must be a JSON object\n")
			return 1
		}
	}
	tracker := slessTrackStdout()
	var out []byte
	err := slessGuard(func() error {
		result, err := slessEntrypoint(ctx, event)
		if err == nil {
			out, err = json.Marshal(result)
		}
		return err
	})
	atLineStart := tracker.finish()
	if err != nil {
		if slessTypeName(err) != "panic" {
			fmt.Fprintf(slessStderr, "error: %v\n", err)
		}
		return 1
	}
	if !atLineStart {
		_, _ = slessStdout.WriteString("\n")
	}
	_, _ = slessStdout.Write(append(out, '\n'))
	return 0
}

// slessStdoutTracker passes the function's stdout through a pipe to learn whether it
// ended a line, so that the result always starts a line of its own.
type slessStdoutTracker struct {
	w    *os.File
	done chan struct{}
	last byte
}

func slessTrackStdout() *slessStdoutTracker {
	r, w, err := os.Pipe()
	if err != nil || slessDup2(int(w.Fd()), 1) != nil {
		return nil
	}
	t := &slessStdoutTracker{w: w, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				_, _ = slessStdout.Write(buf[:n])
				t.last = buf[n-1]
			}
			if err != nil {
				return
			}
		}
	}()
	return t
}

func (t *slessStdoutTracker) finish() (atLineStart bool) {
	if t == nil {
		return false
	}
	_ = slessDup2(int(slessStdout.Fd()), 1)
	_ = t.w.Close()
	select {
	case <-t.done:
		return t.last == 0 || t.last == '\n'
	case <-time.After(2 * time.Second): // a child process still holds the pipe open
		return false
	}
}

func slessGetenv(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
