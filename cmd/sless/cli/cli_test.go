package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	srv := apitest.Start(t, func(cfg *httpapi.Config) {
		cfg.Verifier, cfg.ExternalURL, cfg.RateLimit = verifier, "http://sless.example.test", -1
	})
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
}
