package drivertest

import (
	"testing"

	"github.com/slessio/sless/domain"
)

// TestEveryRuntimeHasSamples: a runtime domain accepts is one the suite
// has samples for (sampleRuntimes).
func TestEveryRuntimeHasSamples(t *testing.T) {
	t.Parallel()
	for _, r := range domain.Runtimes {
		if s, ok := sampleRuntimes[r]; !ok || s.word == "" {
			t.Errorf("sampleRuntimes has no complete row for %s: add it with the runtime's samples", r)
		}
	}
}
