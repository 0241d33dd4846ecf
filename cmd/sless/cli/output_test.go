package cli

import (
	"bytes"
	"os"
	"testing"

	"github.com/creack/pty"
)

// TestColourOnlyOnATerminal: colour into a terminal (a pseudo-terminal
// here); no escape codes into a buffer, a pipe, or with NO_COLOR set.
func TestColourOnlyOnATerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("no pseudo-terminal to test with: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	t.Setenv("NO_COLOR", "")
	if got := colour(tty, "Ready"); got != "\x1b[32mReady\x1b[0m" {
		t.Errorf("colour into a terminal = %q", got)
	}
	if got := colour(tty, "Failed"); got != "\x1b[31mFailed\x1b[0m" {
		t.Errorf("colour into a terminal = %q", got)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, out := range []any{&bytes.Buffer{}, w} {
		if got := colour(out.(interface{ Write([]byte) (int, error) }), "Ready"); got != "Ready" {
			t.Errorf("colour into %T = %q", out, got)
		}
	}
	t.Setenv("NO_COLOR", "1")
	if got := colour(os.Stdout, "Failed"); got != "Failed" {
		t.Errorf("colour with NO_COLOR = %q", got)
	}
}
