package client_test

import (
	"flag"
	"testing"
)

// TestClient calls every method of the client against the real API, each
// subtest in a namespace of its own, and then (unless -run picks some
// subtests) checks that every route of the client's table was called.
func TestClient(t *testing.T) {
	t.Parallel()
	f := setup(t)
	t.Cleanup(func() {
		if run := flag.Lookup("test.run").Value.String(); run != "" && run != "^TestClient$" && run != "TestClient" {
			return
		}
		if missing := f.calls.uncalled(); len(missing) > 0 {
			t.Errorf("routes of the client no test called: %v", missing)
		}
	})

	for _, sub := range []struct {
		name string
		run  func(*testing.T, *fixture)
	}{
		{"EnsureNamespace", testEnsureNamespace},
		{"Functions", testFunctions},
		{"UploadSourceVersionsRollback", testUploadSourceVersionsRollback},
		{"Triggers", testTriggers},
		{"Jobs", testJobs},
		{"Invocations", testInvocations},
		{"Invoke", testInvoke},
		{"Async", testAsync},
		{"Events", testEvents},
		{"Secrets", testSecrets},
		{"Unauthorized", testUnauthorized},
	} {
		t.Run(sub.name, func(t *testing.T) {
			t.Parallel()
			sub.run(t, f)
		})
	}
}
