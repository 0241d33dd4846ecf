package auth

import (
	"regexp"
	"testing"
)

func TestNamespace(t *testing.T) {
	t.Parallel()
	// The vector from SPEC §1; existing namespaces depend on it.
	if got := Namespace("019cc268-6c6a-781e-8613-4bed4ec7cd20"); got != "sless-ffd1f598c169b0ae" {
		t.Fatalf("Namespace = %q, want sless-ffd1f598c169b0ae", got)
	}
	// sha256("alice") = 2bd806c97f0e00af...
	if got := Namespace("alice"); got != "sless-2bd806c97f0e00af" {
		t.Fatalf("Namespace(alice) = %q", got)
	}
	shape := regexp.MustCompile(`^sless-[0-9a-f]{16}$`)
	for _, sub := range []string{"", "bob", "ALICE", "user@example.com", "ü"} {
		if got := Namespace(sub); !shape.MatchString(got) {
			t.Fatalf("Namespace(%q) = %q, not a valid namespace", sub, got)
		}
	}
	if Namespace("alice") == Namespace("Alice") {
		t.Fatal("subjects differing in case share a namespace")
	}
}
