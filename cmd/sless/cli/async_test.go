package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/cmd/sless/cli"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/internal/testutil"
)

// greeterPy answers {"hello": name}, or the status an event asks for,
// after the seconds it asks to sleep.
const greeterPy = `import time


def handle(event):
    time.sleep(event.get("sleep", 0))
    if event.get("status"):
        return {"statusCode": event["status"], "body": "asked for %d" % event["status"]}
    print("greeting", event.get("name", "world"))
    return {"hello": event.get("name", "world")}
`

// queuedID matches the id `fn invoke --async` prints.
var queuedID = regexp.MustCompile(`Queued invocation ([0-9a-f-]{36}) of `)

// slessAt returns a runner of the client commands against the API at url
// with token, failing the test on an error.
func slessAt(t *testing.T, url, tok string) (run func(args ...string) (string, error), must func(args ...string) string) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(cli.EnvURL, "")
	t.Setenv(cli.EnvToken, "")
	run = func(args ...string) (string, error) {
		t.Helper()
		return sless(t, append(args, "--url", url, "--token", tok)...)
	}
	must = func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("sless %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	return run, must
}

// functionDir writes a function's files into a new directory.
func functionDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestInvokeAsyncThenWait: fn invoke --async queues a call and prints its
// id; fn invocation --wait shows it succeeded with its attempt and answer,
// exits non-zero for a call that failed (a 4xx) and gives up after
// --wait-timeout; an Idempotency-Key queues once; a callback on the
// allow-list gets the answer; the id of a call that was not queued shows
// its log record.
func TestInvokeAsyncThenWait(t *testing.T) {
	hooks := make(chan map[string]any, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cb map[string]any
		_ = json.NewDecoder(r.Body).Decode(&cb)
		hooks <- cb
	}))
	defer hook.Close()
	url, tok := platform(t, "cli-async", platformOptions{callbackAllow: hook.URL})
	run, must := slessAt(t, url, tok)
	must("fn", "deploy", functionDir(t, map[string]string{"handler.py": greeterPy}), "--name", "hello", "--runtime", "python3.11", "--quiet")

	out := must("fn", "invoke", "hello", "--async", "--data", `{"name": "later"}`)
	m := queuedID.FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "sless fn invocation hello "+m[1]+" --wait") {
		t.Fatalf("fn invoke --async = %q; want the id and how to read the outcome", out)
	}
	id := m[1]
	out = must("fn", "invocation", "hello", id, "--wait")
	for _, want := range []string{"state:", "succeeded", "response:", "200 OK", `{"hello":"later"}`, "ATTEMPT", "\n1  "} {
		if !strings.Contains(out, want) {
			t.Fatalf("fn invocation --wait = %q; want %q in it", out, want)
		}
	}
	var inv client.AsyncInvocation
	out = must("fn", "invocation", "hello", id, "-o", "json")
	if json.Unmarshal([]byte(out), &inv) != nil || inv.InvocationID != id || inv.State != "succeeded" || len(inv.Attempts) != 1 ||
		inv.Response == nil || inv.Response.Status != 200 {
		t.Fatalf("fn invocation -o json = %s", out)
	}

	// A 4xx answer is final: --wait exits non-zero saying so. --wait gives
	// up after --wait-timeout, saying where the invocation is.
	out = must("fn", "invoke", "hello", "--async", "--data", `{"status": 404}`)
	id = queuedID.FindStringSubmatch(out)[1]
	out, err := run("fn", "invocation", "hello", id, "--wait")
	if err == nil || err.Error() != "invocation "+id+" of hello failed: the function answered 404 Not Found" ||
		!strings.Contains(out, "state:       failed") || !strings.Contains(out, "asked for 404") {
		t.Fatalf("fn invocation --wait of a 404: %v\n%s", err, out)
	}
	out = must("fn", "invoke", "hello", "--async", "--data", `{"sleep": 3}`)
	id = queuedID.FindStringSubmatch(out)[1]
	_, err = run("fn", "invocation", "hello", id, "--wait", "--wait-timeout", "300ms")
	if err == nil || !regexp.MustCompile(`^invocation `+id+` of hello is still (queued|running) after --wait-timeout 300ms`).MatchString(err.Error()) {
		t.Fatalf("fn invocation --wait --wait-timeout 300ms of a slow call: %v", err)
	}

	// One Idempotency-Key, one invocation: a repeat says it was accepted
	// before, with its state; another request under the key is refused.
	var first, again struct {
		InvocationID string `json:"invocation_id"`
		State        string `json:"state"`
		Created      bool   `json:"created"`
	}
	args := []string{"fn", "invoke", "hello", "--async", "--idempotency-key", "order-1", "--data", `{"name": "once"}`}
	if out = must(append(args, "-o", "json")...); json.Unmarshal([]byte(out), &first) != nil || first.InvocationID == "" || !first.Created || first.State != "queued" {
		t.Fatalf("first enqueue with a key -o json = %s", out)
	}
	if out = must(append(args, "-o", "yaml")...); !strings.Contains(out, "invocation_id: "+first.InvocationID) || !strings.Contains(out, "created: false") {
		t.Fatalf("the repeat -o yaml = %s; want the first id, not created", out)
	}
	must("fn", "invocation", "hello", first.InvocationID, "--wait")
	out = must(args...)
	if !strings.Contains(out, `Idempotency-Key "order-1" was accepted before: invocation `+first.InvocationID+" of hello, succeeded") {
		t.Fatalf("the repeat = %q; want it accepted before, succeeded", out)
	}
	if out = must(append(args, "-o", "json")...); json.Unmarshal([]byte(out), &again) != nil || again.InvocationID != first.InvocationID || again.Created {
		t.Fatalf("the repeat -o json = %s; want %s, not created", out, first.InvocationID)
	}
	if _, err := run("fn", "invoke", "hello", "--async", "--idempotency-key", "order-1", "--data", `{"name": "other"}`); err == nil ||
		!strings.Contains(err.Error(), "was used for another request") {
		t.Fatalf("another request under a used key: %v", err)
	}

	// A callback on the allow-list gets the final answer, and the
	// invocation says it was delivered; one off the list is refused.
	out = must("fn", "invoke", "hello", "--async", "--callback-url", hook.URL+"/done", "--data", `{"name": "hook"}`)
	id = queuedID.FindStringSubmatch(out)[1]
	select {
	case cb := <-hooks:
		if cb["invocation_id"] != id || cb["state"] != "succeeded" || !strings.Contains(cb["body"].(string), "hook") {
			t.Fatalf("callback = %v", cb)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no callback within a minute")
	}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		out = must("fn", "invocation", "hello", id)
		return strings.Contains(out, "callback:") && strings.Contains(out, hook.URL+"/done (delivered)")
	})
	if _, err := run("fn", "invoke", "hello", "--async", "--callback-url", "http://evil.example.test/x"); err == nil ||
		!strings.HasPrefix(err.Error(), "--callback-url: http://evil.example.test:80 is not on the operator's callback allow-list") {
		t.Fatalf("a callback off the allow-list: %v", err)
	}

	// A call that was not queued: its record of the invocation log.
	out = must("fn", "invoke", "hello", "--data", `{"name": "now"}`, "-v")
	m = regexp.MustCompile(`invocation ([0-9a-f-]{36})\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("fn invoke -v = %q; want the invocation's id", out)
	}
	if out = must("fn", "invocation", "hello", m[1]); !strings.Contains(out, "  200  ") || !strings.Contains(out, "| greeting now") {
		t.Fatalf("fn invocation of a call not queued = %q; want its log record", out)
	}
	if _, err := run("fn", "invocation", "hello", "0193a3e0-5f1c-7d2e-9a4b-8c6d0e1f2a3b"); err == nil ||
		!strings.Contains(err.Error(), `invocation "0193a3e0-5f1c-7d2e-9a4b-8c6d0e1f2a3b" of function "hello" not found`) {
		t.Fatalf("fn invocation of an unknown id: %v", err)
	}
}

// TestDeadLettersRetryAndRemove: a function answering 500 with async
// max_retries 0 (from sless.yaml) dead-letters a queued call at its first
// attempt; dlq ls lists the dead letters page by page; after fixed code is
// deployed dlq retry delivers one (attempt 2) and --all the rest; dlq rm
// deletes one, or all of them saying how many.
func TestDeadLettersRetryAndRemove(t *testing.T) {
	url, tok := platform(t, "cli-dlq", platformOptions{})
	run, must := slessAt(t, url, tok)
	broken := `def handle(event):
    return {"statusCode": 500, "body": "not yet"}
`
	dir := functionDir(t, map[string]string{"handler.py": broken,
		"sless.yaml": "name: flaky\nruntime: python3.11\nasync:\n  max_retries: 0\n"})
	must("fn", "deploy", dir, "--async-max-event-age", "600", "--quiet")
	out := must("fn", "get", "flaky")
	for _, want := range []string{"async max retries:", "async max event age:    600 s", "async max concurrency:  0 (no bound of its own)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("fn get = %q; want %q in it", out, want)
		}
	}
	if !regexp.MustCompile(`async max retries:\s+0\n`).MatchString(out) {
		t.Fatalf("fn get = %q; want async max retries 0 from sless.yaml", out)
	}

	var ids []string
	for range 4 {
		ids = append(ids, queuedID.FindStringSubmatch(must("fn", "invoke", "flaky", "--async"))[1])
	}
	for _, id := range ids {
		out, err := run("fn", "invocation", "flaky", id, "--wait")
		if err == nil || !strings.Contains(err.Error(), "is a dead letter (retries exhausted)") || !strings.Contains(err.Error(), "sless fn dlq retry flaky "+id) {
			t.Fatalf("fn invocation --wait of a dead letter: %v\n%s", err, out)
		}
		if !strings.Contains(out, "dead_lettered") || !strings.Contains(out, "500 Internal Server Error") || !strings.Contains(out, "not yet") {
			t.Fatalf("fn invocation --wait of a dead letter = %q", out)
		}
	}

	out = must("fn", "dlq", "ls", "flaky")
	if !strings.HasPrefix(out, "ID") || !strings.Contains(out, "LAST STATUS") || strings.Count(out, "retries exhausted") != 4 {
		t.Fatalf("dlq ls = %q; want a table of 4 dead letters", out)
	}
	for _, id := range ids {
		if !regexp.MustCompile(id + `\s+\S+\s+1\s+500\s+retries exhausted`).MatchString(out) {
			t.Fatalf("dlq ls = %q; want %s with 1 attempt, status 500", out, id)
		}
	}
	// Page by page, newest first.
	out = must("fn", "dlq", "ls", "flaky", "--limit", "3")
	m := regexp.MustCompile(`More: sless fn dlq ls flaky --cursor (\S+) \(or --all\)`).FindStringSubmatch(out)
	if m == nil || strings.Contains(out, ids[0]) || !strings.Contains(out, ids[3]) {
		t.Fatalf("dlq ls --limit 3 = %q; want the 3 newest and the next page's cursor", out)
	}
	if out = must("fn", "dlq", "ls", "flaky", "--limit", "3", "--cursor", m[1]); !strings.Contains(out, ids[0]) || strings.Contains(out, ids[1]) || strings.Contains(out, "More:") {
		t.Fatalf("dlq ls --cursor = %q; want the oldest only", out)
	}
	var page client.AsyncPage
	if out = must("fn", "dlq", "ls", "flaky", "--limit", "1", "--all", "-o", "json"); json.Unmarshal([]byte(out), &page) != nil ||
		len(page.Invocations) != 4 || page.NextCursor != "" || page.Invocations[3].InvocationID != ids[0] {
		t.Fatalf("dlq ls --all -o json = %s", out)
	}

	if out = must("fn", "dlq", "rm", "flaky", ids[3]); out != "Deleted dead letter "+ids[3]+" of flaky.\n" {
		t.Fatalf("dlq rm ID = %q", out)
	}
	if _, err := run("fn", "dlq", "rm", "flaky", ids[3]); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("dlq rm of a deleted dead letter: %v", err)
	}

	// Fixed code (which fails only when asked to): a retry delivers it.
	fixed := `def handle(event):
    if event.get("fail"):
        return {"statusCode": 503, "body": "asked to fail"}
    return {"fixed": True}
`
	if err := os.WriteFile(filepath.Join(dir, "handler.py"), []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	must("fn", "deploy", dir, "--quiet")
	out = must("fn", "dlq", "retry", "flaky", ids[0])
	if !strings.Contains(out, "Queued dead letter "+ids[0]+" of flaky again: attempt 2 follows") {
		t.Fatalf("dlq retry = %q", out)
	}
	out = must("fn", "invocation", "flaky", ids[0], "--wait")
	if !strings.Contains(out, "succeeded") || !strings.Contains(out, `{"fixed":true}`) ||
		!regexp.MustCompile(`\n1 .*500`).MatchString(out) || !regexp.MustCompile(`\n2 .*200`).MatchString(out) {
		t.Fatalf("fn invocation --wait after the retry = %q; want succeeded at attempt 2 after a 500", out)
	}
	if _, err := run("fn", "dlq", "retry", "flaky", ids[0]); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("dlq retry of an invocation that is no dead letter: %v", err)
	}
	var retried []client.AsyncInvocation
	if out = must("fn", "dlq", "retry", "flaky", "--all", "-o", "json"); json.Unmarshal([]byte(out), &retried) != nil || len(retried) != 2 {
		t.Fatalf("dlq retry --all -o json = %s; want the 2 left", out)
	}
	for _, inv := range retried {
		must("fn", "invocation", "flaky", inv.InvocationID, "--wait")
	}
	if out = must("fn", "dlq", "ls", "flaky"); out != "No dead letters of flaky.\n" {
		t.Fatalf("dlq ls after retrying all = %q", out)
	}

	// rm --all says how many it deleted.
	for range 2 {
		id := queuedID.FindStringSubmatch(must("fn", "invoke", "flaky", "--async", "--data", `{"fail": true}`))[1]
		if _, err := run("fn", "invocation", "flaky", id, "--wait"); err == nil {
			t.Fatalf("invocation %s did not fail", id)
		}
	}
	if out = must("fn", "dlq", "rm", "flaky", "--all"); out != "Deleted 2 dead letters of flaky.\n" {
		t.Fatalf("dlq rm --all = %q", out)
	}
	if out = must("fn", "dlq", "rm", "flaky", "--all", "-o", "json"); strings.TrimSpace(out) != `{
  "deleted": 0
}` {
		t.Fatalf("dlq rm --all -o json of none = %q", out)
	}
}

// TestAsyncUsageErrors: the async flags without --async, dlq commands
// without an ID or --all (or with both), and async configuration a deploy
// sends and fn get shows.
func TestAsyncUsageErrors(t *testing.T) {
	url, tok := api(t, "cli-async-usage")
	run, must := slessAt(t, url, tok)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fn", "invoke", "hello", "--idempotency-key", "k1"}, "--idempotency-key and --callback-url are for a queued call: add --async"},
		{[]string{"fn", "invoke", "hello", "--callback-url", "https://hooks.example.com/x"}, "add --async"},
		{[]string{"fn", "invoke", "hello", "--async", "--via-http"}, "leave out --via-http"},
		{[]string{"fn", "invoke", "hello", "--async", "--idempotency-key", ""}, `--idempotency-key "": must be 1 to 255 bytes`},
		{[]string{"fn", "invocation", "hello"}, "accepts 2 arg(s), received 1"},
		{[]string{"fn", "invocation", "hello", "x", "--wait-timeout", "soon"}, `invalid argument "soon"`},
		{[]string{"fn", "dlq", "rm", "hello"}, "say which dead letter to delete: its ID (sless fn dlq ls hello lists them), or --all for every one"},
		{[]string{"fn", "dlq", "rm", "hello", "0193a3e0-5f1c-7d2e-9a4b-8c6d0e1f2a3b", "--all"}, "give an ID or --all, not both"},
		{[]string{"fn", "dlq", "retry", "hello"}, "say which dead letter to retry"},
		{[]string{"fn", "dlq", "retry", "hello", "a", "b", "c"}, "accepts between 1 and 2 arg(s)"},
		{[]string{"fn", "dlq", "ls", "hello", "--limit", "0"}, "--limit 0"},
		{[]string{"fn", "dlq", "ls", "hello"}, `function "hello" not found in your namespace — run: sless fn ls`},
	} {
		if _, err := run(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want %q", c.args, err, c.want)
		}
	}

	// The deploy flags set the async configuration; a later deploy keeps
	// what it does not set. (Nothing builds on this server.)
	dir := functionDir(t, map[string]string{"handler.py": greeterPy})
	must("fn", "deploy", dir, "--name", "cfg", "--runtime", "python3.11", "--no-wait", "--async-max-retries", "5", "--async-max-concurrency", "3")
	must("fn", "deploy", dir, "--name", "cfg", "--no-wait", "--async-max-event-age", "600")
	var fn client.Function
	if out := must("fn", "get", "cfg", "-o", "json"); json.Unmarshal([]byte(out), &fn) != nil ||
		fn.Async != (client.AsyncConfig{MaxRetries: 5, MaxEventAgeSec: 600, MaxConcurrency: 3}) {
		t.Fatalf("fn get -o json = %s; want async 5 retries, 600 s, 3 at once", out)
	}
	out := must("fn", "get", "cfg")
	for _, want := range []string{"async max retries:      5\n", "async max event age:    600 s\n", "async max concurrency:  3\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("fn get = %q; want %q in it", out, want)
		}
	}
}
