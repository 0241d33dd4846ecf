package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/cmd/sless/cli"
	"github.com/slessio/sless/httpapi/client"
)

// slessIn runs the client commands as sless does, with stdin, against the
// API at url; it returns stdout, stderr and the error.
func slessIn(t *testing.T, url, tok, stdin string, args ...string) (string, string, error) {
	t.Helper()
	root := &cobra.Command{Use: "sless", SilenceUsage: true, SilenceErrors: true}
	cli.AddCommands(root)
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append(args, "--url", url, "--token", tok))
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// TestSecretCommands: secret set from a file and from stdin (never an
// argument), ls, get and rm; fn deploy gives a function secrets as env vars
// and files (--secret, --secret-file, or sless.yaml), prints the API's
// warnings, and fn get shows names and versions; a secret in use is not
// deleted; no output ever holds a value. (Nothing builds on this server.)
func TestSecretCommands(t *testing.T) {
	url, tok := api(t, "cli-secrets")
	run, must := slessAt(t, url, tok)
	const value, rotated = "s3cr3t-value-of-db", "r0tated-value-of-db"
	outputs := ""
	keep := func(out string) string { outputs += out; return out }

	// The value is never an argument; it comes from a file or stdin.
	if _, err := run("secret", "set", "db", value); err == nil || !strings.Contains(err.Error(), "never as an argument") ||
		!strings.Contains(err.Error(), "shell's history") {
		t.Fatalf("secret set NAME VALUE: %v; want a refusal that says why", err)
	}
	if _, err := run("secret", "set", "Bad_Name", "--from-file", os.DevNull); err == nil || !strings.HasPrefix(err.Error(), `secret name "Bad_Name" must consist of`) {
		t.Fatalf("secret set of a bad name: %v", err)
	}
	file := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(file, []byte(value), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := keep(must("secret", "set", "db", "--from-file", file)); out != "Set secret db: version 1.\n" {
		t.Fatalf("secret set --from-file = %q", out)
	}
	if _, err := run("secret", "set", "empty", "--from-file", os.DevNull); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("secret set from an empty file: %v", err)
	}
	if out, _, err := slessIn(t, url, tok, "tls-key-bytes\n", "secret", "set", "tls"); err != nil || out != "Set secret tls: version 1.\n" {
		t.Fatalf("secret set from stdin = %q (%v)", out, err)
	}
	if _, _, err := slessIn(t, url, tok, "", "secret", "set", "nothing"); err == nil || !strings.Contains(err.Error(), "value is empty") {
		t.Fatalf("secret set from an empty stdin: %v", err)
	}

	// fn deploy gives a function the secrets, and warns about a plain env
	// var that looks like a credential.
	dir := functionDir(t, map[string]string{"handler.py": greeterPy})
	_, errOut, err := slessIn(t, url, tok, "", "fn", "deploy", dir, "--name", "app", "--runtime", "python3.11", "--no-wait",
		"--env", "API_TOKEN=plain", "--secret", "DB_PASSWORD=db", "--secret-file", "tls")
	if err != nil || !regexp.MustCompile(`(?m)^warning: .*API_TOKEN`).MatchString(errOut) {
		t.Fatalf("fn deploy with secrets and a credential in --env: %v; stderr %q, want a warning naming API_TOKEN", err, errOut)
	}
	out := keep(must("fn", "get", "app"))
	for _, want := range []string{"DB_PASSWORD=db (v1)", "/run/secrets/tls (v1)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("fn get = %q; want %q in it", out, want)
		}
	}
	var fn client.Function
	if out := keep(must("fn", "get", "app", "-o", "json")); json.Unmarshal([]byte(out), &fn) != nil || fn.Secrets["DB_PASSWORD"] != "db" ||
		len(fn.SecretFiles) != 1 || fn.SecretVersions["tls"] != 1 {
		t.Fatalf("fn get -o json = %s", out)
	}

	// A new value: a new version of the secret, and of the function that
	// uses it (it has code).
	out, _, err = slessIn(t, url, tok, rotated, "secret", "set", "db")
	keep(out)
	if err != nil || !strings.HasPrefix(out, "Set secret db: version 2.\n") || !regexp.MustCompile(`Function app: version \d+ runs it\.`).MatchString(out) {
		t.Fatalf("secret set of a used secret = %q (%v); want version 2 and app's new version", out, err)
	}
	if out := keep(must("fn", "get", "app")); !strings.Contains(out, "DB_PASSWORD=db (v2)") {
		t.Fatalf("fn get after the set = %q; want DB_PASSWORD=db (v2)", out)
	}
	out = keep(must("secret", "ls"))
	if !regexp.MustCompile(`NAME\s+VERSION\s+UPDATED\s+USED BY\n`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^db\s+2\s+\S+Z\s+app$`).MatchString(out) || !regexp.MustCompile(`(?m)^tls\s+1\s+\S+Z\s+app$`).MatchString(out) {
		t.Fatalf("secret ls = %q", out)
	}
	if out := keep(must("secret", "get", "db")); !regexp.MustCompile(`(?m)^used by:\s+app$`).MatchString(out) || !regexp.MustCompile(`(?m)^version:\s+2$`).MatchString(out) {
		t.Fatalf("secret get = %q", out)
	}
	var ss []client.Secret
	if out := keep(must("secret", "ls", "-o", "json")); json.Unmarshal([]byte(out), &ss) != nil || len(ss) != 2 {
		t.Fatalf("secret ls -o json = %s", out)
	}
	if _, err := run("secret", "get", "absent"); err == nil || err.Error() != `secret "absent" not found in your namespace — run: sless secret ls` {
		t.Fatalf("secret get of an unknown secret: %v", err)
	}

	// In use, it stays; out of the configuration, it goes.
	if _, err := run("secret", "rm", "db"); err == nil || !strings.Contains(err.Error(), "app") || !strings.Contains(err.Error(), "(HTTP 409 CONFLICT)") {
		t.Fatalf("secret rm of a used secret: %v; want a refusal naming app", err)
	}
	must("fn", "deploy", dir, "--name", "app", "--no-wait", "--secret", "", "--secret-file", "")
	var cleared client.Function
	if out := must("fn", "get", "app", "-o", "json"); json.Unmarshal([]byte(out), &cleared) != nil || len(cleared.Secrets) != 0 || len(cleared.SecretFiles) != 0 {
		t.Fatalf("after --secret '' --secret-file '': %s", out)
	}
	if out := must("secret", "rm", "db"); out != "Deleted secret db.\n" {
		t.Fatalf("secret rm = %q", out)
	}

	// Mistakes are caught before a call, or named by the API.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--secret", "DB_PASSWORD"}, `--secret "DB_PASSWORD": write it as ENV=SECRET`},
		{[]string{"--secret", "DB=Not_A_Name"}, `--secret: "Not_A_Name" must consist of lower-case letters`},
		{[]string{"--secret", "SLESS_X=tls"}, "--secret: variable name \"SLESS_X\" is reserved"},
		{[]string{"--secret", "A=tls", "--env", "A=1"}, `--secret: variable "A" is also set in env_vars`},
		{[]string{"--secret-file", "tls", "--secret-file", "tls"}, `--secret-file: names "tls" twice`},
		{[]string{"--secret", "DB=db"}, "secret db does not exist in this namespace; set it first (sless secret set db)"},
	} {
		_, err := run(append([]string{"fn", "deploy", dir, "--name", "app", "--no-wait"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("fn deploy %v: %v; want %q", c.args, err, c.want)
		}
	}

	// sless.yaml names them too.
	proj := functionDir(t, map[string]string{"handler.py": greeterPy,
		"sless.yaml": "name: fromfile\nruntime: python3.11\nsecrets:\n  TLS_KEY: tls\nsecret_files: [tls]\n"})
	must("fn", "deploy", proj, "--no-wait")
	var fromFile client.Function
	if out := must("fn", "get", "fromfile", "-o", "json"); json.Unmarshal([]byte(out), &fromFile) != nil || fromFile.Secrets["TLS_KEY"] != "tls" || len(fromFile.SecretFiles) != 1 {
		t.Fatalf("secrets from sless.yaml: %s", out)
	}
	must("fn", "deploy", functionDir(t, map[string]string{"handler.py": greeterPy,
		"sless.yaml": "name: fromfile\nruntime: python3.11\nsecrets:\nsecret_files:\n"}), "--no-wait")
	var emptied client.Function
	if out := must("fn", "get", "fromfile", "-o", "json"); json.Unmarshal([]byte(out), &emptied) != nil || len(emptied.Secrets) != 0 || len(emptied.SecretFiles) != 0 {
		t.Fatalf("after secrets: and secret_files: with no value in sless.yaml: %s; want none", out)
	}
	bad := functionDir(t, map[string]string{"handler.py": greeterPy, "sless.yaml": "name: bad\nruntime: python3.11\nsecret_files: [Bad_Name]\n"})
	if _, err := run("fn", "deploy", bad, "--no-wait"); err == nil || !strings.Contains(err.Error(), "sless.yaml:3: secret_files: ") {
		t.Fatalf("a bad secret name in sless.yaml: %v", err)
	}

	for _, v := range []string{value, rotated, "tls-key-bytes"} {
		if strings.Contains(outputs, v) {
			t.Fatalf("a command printed the value %q:\n%s", v, outputs)
		}
	}
}
