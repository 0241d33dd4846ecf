package localdriver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// tailBuffer keeps the last max bytes written to it and counts the rest: a
// job's result is its last stdout line and a traceback ends stderr, so the
// end is what must survive a flood of output.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped int64
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

// Write implements io.Writer; it never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	// Trim only once the buffer holds twice the limit: amortized O(1).
	if len(t.buf) > 2*t.max {
		cut := len(t.buf) - t.max
		t.dropped += int64(cut)
		t.buf = append(t.buf[:0], t.buf[cut:]...)
	}
	return len(p), nil
}

// String returns the kept output, after a note of how much was dropped.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, dropped := t.buf, t.dropped
	if len(b) > t.max {
		dropped += int64(len(b) - t.max)
		b = b[len(b)-t.max:]
	}
	if dropped == 0 {
		return string(b)
	}
	return fmt.Sprintf("[sless: %d earlier bytes dropped]\n", dropped) + string(b)
}

// lastLines returns at most n of the last lines of s, at most max bytes.
func lastLines(s string, n, max int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "\n")
	if len(out) > max {
		out = "…" + out[len(out)-max:]
	}
	return out
}

// maxLogLine caps one logged output line.
const maxLogLine = 4 << 10

// lineLogger logs each line a function process prints outside of a request
// (load messages, crashes, background threads) and keeps stderr's tail for
// the messages of failed starts and crash loops.
type lineLogger struct {
	log    *slog.Logger
	stream string
	tail   *tailBuffer // nil for stdout

	mu      sync.Mutex
	partial []byte
}

// Write implements io.Writer.
func (l *lineLogger) Write(p []byte) (int, error) {
	if l.tail != nil {
		l.tail.Write(p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.emit(l.partial[:i])
		l.partial = l.partial[i+1:]
	}
	if len(l.partial) > maxLogLine {
		l.emit(l.partial)
		l.partial = l.partial[:0]
	}
	return len(p), nil
}

func (l *lineLogger) emit(line []byte) {
	if len(line) > maxLogLine {
		line = line[:maxLogLine]
	}
	l.log.LogAttrs(context.Background(), slog.LevelInfo, "function output",
		slog.String("stream", l.stream), slog.String("line", string(bytes.TrimRight(line, "\r"))))
}

// switchWriter writes to w until set names another writer: a pooled
// process's output goes to the pool's log until a function takes it, then
// to that function's.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write implements io.Writer.
func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	w := s.w
	s.mu.Unlock()
	return w.Write(p)
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}
