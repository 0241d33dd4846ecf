// Package testutil holds the helpers the tests of several packages share:
// error-code assertions, a log buffer safe for many goroutines, a clock the
// tests move by hand and unique tenant namespaces. Only tests import it.
// (The domain package's own tests keep theirs: this package imports domain.)
package testutil

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
)

// RequireCode fails tb unless err carries the domain error code want with a
// readable message (any error counts as EINTERNAL), whose text contains each
// of msgParts.
func RequireCode(tb testing.TB, err error, want string, msgParts ...string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("got no error, want code %s", want)
	}
	if got := domain.ErrorCode(err); got != want {
		tb.Fatalf("error %v has code %q, want %q", err, got, want)
	}
	var de *domain.Error
	if want != domain.EINTERNAL && (!errors.As(err, &de) || de.Message == "") {
		tb.Fatalf("error %v carries no readable message", err)
	}
	for _, p := range msgParts {
		if de == nil || !strings.Contains(de.Message, p) {
			tb.Fatalf("message of %v does not mention %q", err, p)
		}
	}
}

// UniqueNS returns a tenant namespace of the form the platform requires
// ("sless-" and 16 hex digits) that no other test uses.
func UniqueNS(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return "sless-" + hex.EncodeToString(b)
}

// SyncBuffer is a bytes.Buffer that many goroutines may write (a logger's
// output) while a test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the lines written so far that contain every one of parts.
func (b *SyncBuffer) Lines(parts ...string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		ok := l != ""
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// FakeClock is a clock the tests set or move by hand, safe for concurrent
// use. Its zero value reads the real time until Set or Advance is called.
type FakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewFakeClock returns a clock standing at t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{t: t} }

// Now returns the clock's time (the real time while it was never set).
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		return time.Now()
	}
	return c.t
}

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock on by d (from the real time if it was never set).
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		c.t = time.Now()
	}
	c.t = c.t.Add(d)
}

// Eventually polls cond every 100 ms until it returns nil, failing tb with
// its last error once limit has passed.
func Eventually(tb testing.TB, limit time.Duration, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("after %s: %v", limit, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitFor is Eventually for a condition without an error to tell.
func WaitFor(tb testing.TB, limit time.Duration, ok func() bool) {
	tb.Helper()
	Eventually(tb, limit, func() error {
		if ok() {
			return nil
		}
		return errors.New("condition not met")
	})
}
