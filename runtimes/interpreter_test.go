package runtimes

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/slessio/sless/domain"
)

// TestInterpreterLooksAgainAfterAFailure: a failed lookup (the interpreter
// was missing, or the lookup interrupted) is not kept; a path found is.
func TestInterpreterLooksAgainAfterAFailure(t *testing.T) {
	dir := t.TempDir()
	script, marker := filepath.Join(dir, "lookup"), filepath.Join(dir, "seen")
	body := "#!/bin/sh\nif [ ! -e " + marker + " ]; then touch " + marker + "; echo not yet >&2; exit 1; fi\necho /usr/bin/true\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	in := newInterpreter(script)
	if _, err := in.resolve(); domain.ErrorCode(err) != domain.EUNAVAILABLE {
		t.Fatalf("first lookup: %v, want EUNAVAILABLE", err)
	}
	if path, err := in.resolve(); err != nil || path != "/usr/bin/true" {
		t.Fatalf("second lookup: %q, %v; want /usr/bin/true", path, err)
	}
	if err := os.Remove(script); err != nil {
		t.Fatal(err)
	}
	if path, err := in.resolve(); err != nil || path != "/usr/bin/true" {
		t.Fatalf("a path found is kept: %q, %v", path, err)
	}
}
