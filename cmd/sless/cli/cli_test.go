package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/cmd/sless/cli"
	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/apitest"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var secret = []byte("cli-test-secret-0123456789abcdef!")

// api starts the real API and returns its URL and a token of user sub.
func api(t *testing.T, sub string) (string, string) {
	t.Helper()
	verifier, err := auth.NewVerifier(auth.Config{HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	b := apitest.NewBackend(t)
	a, err := httpapi.New(httpapi.Config{Store: b.Store, Code: b.Code, Verifier: verifier, ExternalURL: "http://sless.example.test",
		RateLimit: -1, Secrets: apitest.Vault(t, b.Pool)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	tok, err := auth.Mint(secret, sub, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL, tok
}

// sless runs the client commands with args, as the binary does, and
// returns what they printed and the error.
func sless(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := &cobra.Command{Use: "sless", SilenceUsage: true, SilenceErrors: true}
	cli.AddCommands(root)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// TestLoginThenCommands: login checks the token and keeps it (0600, under
// XDG_CONFIG_HOME); the fn commands then need no flags and find the
// namespace from the token.
func TestLoginThenCommands(t *testing.T) {
	url, tok := api(t, "cli-alice")
	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	t.Setenv(cli.EnvURL, "")
	t.Setenv(cli.EnvToken, "")

	out, err := sless(t, "login", "--url", url, "--token", tok)
	if err != nil || !strings.Contains(out, auth.Namespace("cli-alice")) {
		t.Fatalf("login = %q (%v)", out, err)
	}
	p := filepath.Join(cfgHome, "sless", "config.yaml")
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config file %s: %v %v; want mode 0600", p, st, err)
	}

	c, err := client.New(url, tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateFunction(context.Background(), client.CreateFunctionRequest{Name: "hello", Runtime: "python3.11", EnvVars: map[string]string{"A": "1"}}); err != nil {
		t.Fatal(err)
	}
	out, err = sless(t, "fn", "ls")
	if err != nil || !strings.Contains(out, "hello") || !strings.Contains(out, "python3.11") {
		t.Fatalf("fn ls = %q (%v)", out, err)
	}
	out, err = sless(t, "fn", "ls", "-o", "json")
	var fns []client.Function
	if err != nil || json.Unmarshal([]byte(out), &fns) != nil || len(fns) != 1 || fns[0].Name != "hello" {
		t.Fatalf("fn ls -o json = %q (%v)", out, err)
	}
	out, err = sless(t, "fn", "get", "hello")
	if err != nil || !strings.Contains(out, "runtime:") || !strings.Contains(out, "A=1") || !strings.Contains(out, "Pending") {
		t.Fatalf("fn get = %q (%v)", out, err)
	}
	out, err = sless(t, "fn", "get", "hello", "-o", "yaml")
	if err != nil || !strings.Contains(out, "name: hello") {
		t.Fatalf("fn get -o yaml = %q (%v)", out, err)
	}
	if _, err = sless(t, "fn", "get", "hello", "-o", "xml"); err == nil || !strings.Contains(err.Error(), "text, json and yaml") {
		t.Fatalf("-o xml: %v", err)
	}
	if out, err = sless(t, "fn", "rm", "hello"); err != nil || !strings.Contains(out, "Deleted function hello") {
		t.Fatalf("fn rm = %q (%v)", out, err)
	}
	_, err = sless(t, "fn", "get", "hello")
	if err == nil || err.Error() != `function "hello" not found in your namespace — run: sless fn ls` {
		t.Fatalf("fn get of a deleted function: %v", err)
	}

	// Flags and the environment come before the config file.
	other, _ := auth.Mint(secret, "cli-bob", time.Hour, nil)
	t.Setenv(cli.EnvToken, other)
	if out, err = sless(t, "fn", "ls", "-o", "json"); err != nil || strings.TrimSpace(out) != "[]" {
		t.Fatalf("fn ls as bob = %q (%v)", out, err)
	}
}

// TestErrorsSayWhatToDo: no token, a rejected token, nobody listening.
func TestErrorsSayWhatToDo(t *testing.T) {
	url, _ := api(t, "cli-carol")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(cli.EnvURL, "")
	t.Setenv(cli.EnvToken, "")

	_, err := sless(t, "fn", "ls", "--url", url)
	if err == nil || !strings.Contains(err.Error(), "no token: run `sless login --url "+url+" --token TOKEN`") {
		t.Fatalf("without a token: %v", err)
	}
	forged, _ := auth.Mint([]byte("another-secret-0123456789abcdef!!"), "cli-carol", time.Hour, nil)
	_, err = sless(t, "login", "--url", url, "--token", forged)
	if err == nil || !strings.Contains(err.Error(), "rejected the token (401)") || !strings.Contains(err.Error(), "sless login --url "+url) {
		t.Fatalf("rejected token: %v", err)
	}
	if _, statErr := os.Stat(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "sless", "config.yaml")); !os.IsNotExist(statErr) {
		t.Fatalf("a rejected login wrote the config file (%v)", statErr)
	}
	_, err = sless(t, "fn", "ls", "--url", "http://127.0.0.1:1", "--token", forged)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the sless API at http://127.0.0.1:1 (connection refused)") {
		t.Fatalf("nobody listening: %v", err)
	}
	// A web server that is not sless: said so, without its page.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "<!DOCTYPE HTML><html><body><h1>Error response</h1></body></html>")
	}))
	defer other.Close()
	_, err = sless(t, "fn", "ls", "--url", other.URL, "--token", forged)
	if err == nil || err.Error() != other.URL+" does not answer like a sless API (HTTP 404, text/html): check --url / SLESS_URL (`sless dev` prints the address)" {
		t.Fatalf("a web server that is not sless: %v", err)
	}
	_, err = sless(t, "fn", "invoke", "hello", "--path", "/items", "--url", url, "--token", forged)
	if err == nil || !strings.Contains(err.Error(), "add --via-http") {
		t.Fatalf("--path without --via-http: %v", err)
	}
	_, err = sless(t, "fn", "ls", "--url", url, "--token", "garbage")
	if err == nil || !strings.Contains(err.Error(), "the token is not a JWT") || strings.Contains(err.Error(), "WithNamespace") || strings.Contains(err.Error(), "sless client") {
		t.Fatalf("a token that is not a JWT: %v", err)
	}
}

// TestAPIErrorsNameTheirFieldOnce: a field's error reads "memory_mb: ...",
// never "memory_mb: memory_mb: ...", from the API as from a flag.
func TestAPIErrorsNameTheirFieldOnce(t *testing.T) {
	url, tok := api(t, "cli-dave")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "handler.py"), []byte("def handle(e):\n    return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fn", "deploy", dir, "--name", "small", "--runtime", "python3.11", "--memory", "10"}, "memory_mb: 10 is out of range"},
		{[]string{"fn", "deploy", dir, "--name", "tick", "--runtime", "python3.11", "--cron", "61 * * * *"}, `--cron "61 * * * *": "61 * * * *": minute value`},
		{[]string{"trigger", "create", "bad", "--function", "small", "--cron", "61 * * * *"}, `schedule: "61 * * * *": minute value`},
		{[]string{"fn", "deploy", dir, "--name", "retry", "--runtime", "python3.11", "--async-max-retries", "11"}, "async.max_retries: 11 is out of range"},
		{[]string{"fn", "deploy", dir, "--name", "old", "--runtime", "python3.11", "--async-max-event-age", "59"}, "async.max_event_age_sec: 59 is out of range"},
		{[]string{"fn", "deploy", dir, "--name", "many", "--runtime", "python3.11", "--min-instances", "5", "--max-instances", "2"}, "min_instances: 5 is more than max_instances (2)"},
		{[]string{"fn", "deploy", dir, "--name", "wide", "--runtime", "python3.11", "--concurrency", "1001"}, "concurrency: 1001 is out of range"},
	} {
		_, err := sless(t, append(c.args, "--url", url, "--token", tok)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want %q", c.args, err, c.want)
			continue
		}
		if doubled(err.Error()) {
			t.Errorf("%v: %v names a field twice", c.args, err)
		}
	}
}

// doubled reports a prefix said twice in a row: "schedule: schedule: ...".
func doubled(msg string) bool {
	parts := strings.Split(msg, ": ")
	for i := 1; i < len(parts); i++ {
		if parts[i] == parts[i-1] {
			return true
		}
	}
	return false
}

// TestTriggerCreateTakesCronAndHTTP: `trigger create` takes --cron and
// --http as `fn deploy` does, besides --type and --schedule.
func TestTriggerCreateTakesCronAndHTTP(t *testing.T) {
	url, tok := api(t, "cli-erin")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "handler.py"), []byte("def handle(e):\n    return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) { return sless(t, append(args, "--url", url, "--token", tok)...) }
	if _, err := run("fn", "deploy", dir, "--name", "report", "--runtime", "python3.11", "--no-wait"); err != nil {
		t.Fatal(err)
	}
	out, err := run("trigger", "create", "every5", "--function", "report", "--cron", "*/5 * * * *")
	if err != nil || !strings.Contains(out, "every5  cron") || !strings.Contains(out, "*/5 * * * *") {
		t.Fatalf("--cron: %v\n%s", err, out)
	}
	out, err = run("trigger", "create", "web", "--function", "report", "--http")
	if err != nil || !strings.Contains(out, "web   http") {
		t.Fatalf("--http: %v\n%s", err, out)
	}
	if _, err := run("trigger", "create", "both", "--function", "report", "--http", "--cron", "* * * * *"); err == nil ||
		!strings.Contains(err.Error(), "leave out --http") {
		t.Fatalf("--http with --cron: %v", err)
	}
}
