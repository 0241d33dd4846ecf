package cli

import (
	"bytes"
	"os"
	"testing"
)

// TestColourOnlyOnATerminal: no escape codes into a buffer, a pipe, or with
// NO_COLOR set.
func TestColourOnlyOnATerminal(t *testing.T) {
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
