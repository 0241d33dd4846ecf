package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/internal/testutil"
)

// TestDeployScaleFlagsAndProjectFile: --min-instances, --max-instances and
// --concurrency set how a function scales, a later deploy keeps what it
// does not set, sless.yaml sets them too (a flag overrides the file), fn
// get shows them for people. (Nothing builds on this server.)
func TestDeployScaleFlagsAndProjectFile(t *testing.T) {
	url, tok := api(t, "cli-scale")
	_, must := slessAt(t, url, tok)
	cl, err := client.New(url, tok)
	if err != nil {
		t.Fatal(err)
	}
	scaleOf := func(name string) [3]int {
		t.Helper()
		var fn client.Function
		out := must("fn", "get", name, "-o", "json")
		if json.Unmarshal([]byte(out), &fn) != nil {
			t.Fatalf("fn get -o json = %s", out)
		}
		return [3]int{fn.MinInstances, fn.MaxInstances, fn.Concurrency}
	}

	dir := functionDir(t, map[string]string{"handler.py": greeterPy})
	must("fn", "deploy", dir, "--name", "warm", "--runtime", "python3.11", "--no-wait",
		"--min-instances", "1", "--max-instances", "5", "--concurrency", "4")
	if got := scaleOf("warm"); got != [3]int{1, 5, 4} {
		t.Fatalf("after the create: min, max, concurrency = %v; want [1 5 4]", got)
	}
	must("fn", "deploy", dir, "--name", "warm", "--no-wait", "--max-instances", "8")
	if got := scaleOf("warm"); got != [3]int{1, 8, 4} {
		t.Fatalf("after --max-instances 8 alone: %v; want [1 8 4] (the others kept)", got)
	}
	out := must("fn", "get", "warm")
	for _, want := range []string{"min instances:          1 (kept running)\n", "max instances:          8\n", "concurrency:            4 per instance\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("fn get = %q; want %q in it", out, want)
		}
	}

	// The defaults, said for people: go1.23 takes 16 requests per instance.
	must("fn", "deploy", dir, "--name", "plain", "--runtime", "go1.23", "--no-wait")
	out = must("fn", "get", "plain")
	for _, want := range []string{"min instances:          0 (scale to zero when idle)\n", "max instances:          0 (the platform's default)\n",
		"concurrency:            0 (the runtime's default: 16 per instance)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("fn get of a function with the defaults = %q; want %q in it", out, want)
		}
	}

	// sless.yaml sets them; a flag overrides the file, and what neither
	// sets is kept.
	proj := functionDir(t, map[string]string{"handler.py": greeterPy,
		"sless.yaml": "name: fromfile\nruntime: python3.11\nmin_instances: 2\nconcurrency: 8\n"})
	must("fn", "deploy", proj, "--no-wait", "--concurrency", "3")
	if got := scaleOf("fromfile"); got != [3]int{2, 0, 3} {
		t.Fatalf("from sless.yaml with --concurrency 3: %v; want [2 0 3]", got)
	}
	if _, err := cl.UpdateFunction(context.Background(), "fromfile", client.UpdateFunctionRequest{MaxInstances: client.Ptr(9)}); err != nil {
		t.Fatal(err)
	}
	must("fn", "deploy", proj, "--no-wait")
	if got := scaleOf("fromfile"); got != [3]int{2, 9, 8} {
		t.Fatalf("deployed again from sless.yaml: %v; want [2 9 8] (max_instances, which it does not set, kept)", got)
	}
}

// TestFunctionShowsInstancesNow: fn get shows the instances the answering
// server runs, when its answer says; without them, no such line.
func TestFunctionShowsInstancesNow(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	tok, err := auth.Mint(secret, "cli-instances", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	fns := "/v1/namespaces/" + auth.Namespace("cli-instances") + "/functions/"
	fn := `{"name": "busy", "runtime": "nodejs20", "phase": "Ready", "active_version": 3,
		"min_instances": 1, "max_instances": 4, "concurrency": 0, "created_at": "2026-01-02T03:04:05Z"`
	answers := map[string]string{
		fns + "busy":  fn + `, "instances": {"ready": 1, "desired": 2, "in_flight": 3}}`,
		fns + "quiet": fn + `, "instances": null}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()

	out, err := sless(t, "fn", "get", "busy", "--url", srv.URL, "--token", tok)
	if err != nil || !strings.Contains(out, "instances now:          1 ready of 2 desired, 3 in flight\n") ||
		!strings.Contains(out, "concurrency:            0 (the runtime's default: 1 per instance)\n") {
		t.Fatalf("fn get = %q (%v); want the instances now", out, err)
	}
	out, err = sless(t, "fn", "get", "quiet", "--url", srv.URL, "--token", tok)
	if err != nil || strings.Contains(out, "instances now") || !strings.Contains(out, "min instances:          1 (kept running)\n") {
		t.Fatalf("fn get without instances = %q (%v); want no instances line", out, err)
	}
}

// TestDeployKeepsInstancesRunning: a function served at a URL and deployed
// with --min-instances 1 runs one instance without a call, and fn get says so.
func TestDeployKeepsInstancesRunning(t *testing.T) {
	url, tok := platform(t, "cli-warm", platformOptions{})
	_, must := slessAt(t, url, tok)
	must("fn", "deploy", functionDir(t, map[string]string{"handler.py": greeterPy}), "--name", "warm", "--runtime", "python3.11",
		"--min-instances", "1", "--http", "--quiet")
	ready := regexp.MustCompile(`instances now:\s+1 ready of 1 desired, 0 in flight\n`)
	testutil.Eventually(t, 30*time.Second, func() error {
		if out := must("fn", "get", "warm"); !ready.MatchString(out) {
			return fmt.Errorf("fn get = %q; want 1 instance ready", out)
		}
		return nil
	})
	out := must("fn", "get", "warm")
	if !strings.Contains(out, "min instances:          1 (kept running)\n") {
		t.Fatalf("fn get = %q; want min instances 1", out)
	}
}
