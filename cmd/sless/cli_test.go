package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox/sandboxtest"
	"github.com/slessio/sless/runtimes/runtimestest"
	"github.com/slessio/sless/store/pgtest"
)

// TestCLIQuickStart runs `sless dev` and the README's quick start as written,
// the login line copied from what dev prints: init, deploy (following the
// build), invoke, logs, a job, the listing. Then what the end-to-end suite
// (cmd/sless/e2e, on `sless serve`) does not do: versions, source, a
// .slessignore'd file left out, a failing build that prints its log,
// exits non-zero and leaves the previous version serving, and the
// prototype's table_reader.py with psycopg2 from its requirements.txt.
func TestCLIQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("SLESS_URL", "")
	t.Setenv("SLESS_TOKEN", "")
	// table_reader's database is on this machine: the operator opens its
	// port to functions, as the README's security model says.
	db := pgtest.NewDBURL(t)
	dev := startDevWith(t, "--egress-allow", dbHostPort(t, db))
	ctx := context.Background()
	var login []string
	testutil.WaitFor(t, 60*time.Second, func() bool {
		for _, l := range strings.Split(dev.stdout.String(), "\n") {
			if f := strings.Fields(l); len(f) == 6 && f[0] == "sless" && f[1] == "login" {
				login = f[1:]
			}
		}
		return login != nil
	})
	sless := func(args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(ctx, args, &out, &errOut); err != nil {
			t.Fatalf("sless %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String(), errOut.String()
	}
	want := func(args []string, out, part string) {
		t.Helper()
		if !strings.Contains(out, part) {
			t.Fatalf("sless %s printed %q; want %q in it", strings.Join(args, " "), out, part)
		}
	}
	// The README, line by line (cd'd into a fresh directory).
	dir := filepath.Join(t.TempDir(), "hello")
	steps := []struct {
		args []string
		want string
	}{
		{login, auth.Namespace("demo")},
		{[]string{"fn", "init", dir, "--runtime", "python3.11"}, "sless fn deploy " + dir},
		{[]string{"fn", "deploy", dir}, "Function hello version 1 is Ready."},
		{[]string{"fn", "invoke", "hello", "--data", `{"name": "sless"}`}, `{"hello":"sless"}`},
		{[]string{"job", "run", "hello", "--name", "once", "--event", `{"name": "job"}`, "--wait"}, `{"hello": "job"}`},
		{[]string{"fn", "ls"}, "hello"},
	}
	for _, st := range steps {
		out, progress := sless(st.args...)
		want(st.args, out, st.want)
		if st.args[0] == "fn" && st.args[1] == "deploy" {
			want(st.args, progress, "hello v1: ")
		}
	}
	// Through the public URL too; the log has both, the API's as kind api.
	out, _ := sless("fn", "invoke", "hello", "--via-http", "--data", `{"name": "web"}`)
	want([]string{"fn", "invoke", "--via-http"}, out, `{"hello":"web"}`)
	testutil.WaitFor(t, 30*time.Second, func() bool { // the log is written in batches
		out, _ := sless("fn", "logs", "hello")
		return strings.Contains(out, "api POST /") && strings.Contains(out, "| greeting sless") && strings.Contains(out, "http POST /")
	})

	// A second version; a file .slessignore names is not uploaded.
	write(t, dir, "handler.py", "def handle(event):\n    return {'v': 2}\n")
	write(t, dir, "__pycache__/x.pyc", "not uploaded")
	out, _ = sless("fn", "deploy", dir)
	want([]string{"fn", "deploy"}, out, "version 2 is Ready")
	out, _ = sless("fn", "versions", "hello")
	want([]string{"fn", "versions"}, out, "Succeeded")
	if lines := strings.Count(out, "\n"); lines != 3 {
		t.Fatalf("fn versions lists %d lines, want a header and two versions:\n%s", lines, out)
	}
	out, _ = sless("fn", "source", "hello")
	if !strings.Contains(out, "handler.py") || strings.Contains(out, "pycache") || strings.Contains(out, "sless.yaml") {
		t.Fatalf("fn source lists %q; want handler.py without the ignored files", out)
	}
	out, _ = sless("fn", "source", "hello", "handler.py")
	want([]string{"fn", "source"}, out, "'v': 2")

	// A failing build: its log, exit status non-zero, version 2 serves on.
	write(t, dir, "handler.py", "def handle(event):\n    return (\n")
	var errOut bytes.Buffer
	err := run(ctx, []string{"fn", "deploy", dir}, &bytes.Buffer{}, &errOut)
	if err == nil || !strings.Contains(err.Error(), "the build of version 3 of hello failed") || !strings.Contains(errOut.String(), "SyntaxError") {
		t.Fatalf("failing deploy = %v\n%s", err, errOut.String())
	}
	out, _ = sless("fn", "invoke", "hello")
	want([]string{"fn", "invoke"}, out, `{"v":2}`)

	// Back to version 2's code: unchanged, exit 0, the function Ready, the
	// failed version 3 still shown. Then the same by rollback.
	write(t, dir, "handler.py", "def handle(event):\n    return {'v': 2}\n")
	out, _ = sless("fn", "deploy", dir)
	want([]string{"fn", "deploy"}, out, "unchanged, version 2 is active")
	want([]string{"fn", "deploy"}, out, "Function hello version 2 is Ready.")
	out, _ = sless("fn", "get", "hello")
	want([]string{"fn", "get"}, out, "Ready")
	want([]string{"fn", "get"}, out, "v3 — ")
	sless("fn", "rollback", "hello", "--to", "1")
	out, _ = sless("fn", "get", "hello")
	want([]string{"fn", "get"}, out, "Ready")
	if strings.Contains(out, "SyntaxError") && !strings.Contains(out, "last build failed") {
		t.Fatalf("after a rollback the function still says its failed build is its state:\n%s", out)
	}
	write(t, dir, "handler.py", "def handle(event):\n    return {'v': 2}\n")
	out, _ = sless("fn", "deploy", dir)
	want([]string{"fn", "deploy"}, out, "the code of version 2, active again (was version 1)")

	// The prototype's table_reader.py: psycopg2 from its requirements.txt,
	// reading a table of a PostgreSQL given by env_vars, as a job.
	t.Run("table_reader", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "table-reader")
		runtimestest.WriteFiles(t, dir, runtimestest.TableReaderFiles(t))
		stockTable(t, db)
		sl := func(args ...string) string {
			t.Helper()
			var out, errOut bytes.Buffer
			if err := run(ctx, args, &out, &errOut); err != nil {
				t.Fatalf("sless %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
			}
			return out.String()
		}
		sl(append([]string{"fn", "deploy", dir, "--runtime", "python3.11"}, pgEnvFlags(t, db)...)...)
		out := sl("job", "run", "table-reader", "--name", "read-stock", "--event", "{}", "--wait")
		if !strings.Contains(out, `"name": "apples"`) || !strings.Contains(out, `"qty": 5`) {
			t.Fatalf("table_reader job: %s", out)
		}
		// A function without an http trigger is invoked through the API.
		if out := sl("fn", "invoke", "table-reader", "--data", "{}"); !strings.Contains(out, `"apples"`) {
			t.Fatalf("invoke of a job-only function: %s", out)
		}
		sl("job", "rm", "read-stock")
		sl("fn", "rm", "table-reader")
	})

	sless("fn", "rm", "hello")
	// What runs then is the idle warm pool, which serves no one.
	testutil.WaitFor(t, 30*time.Second, func() bool { return len(sandboxtest.PIDsBut(dev.dataDir, localdriver.ServesNoFunction)) == 0 })
}

// stockTable creates the table table_reader.py reads, in the database at url.
func stockTable(t *testing.T, url string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `CREATE TABLE stock (name text PRIMARY KEY, qty int);
		INSERT INTO stock VALUES ('apples', 3), ('pears', 5)`); err != nil {
		t.Fatal(err)
	}
}

// dbHostPort returns the address and port of the database at url.
func dbHostPort(t *testing.T, url string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}

// pgEnvFlags returns the --env flags that point libpq at the database at url.
func pgEnvFlags(t *testing.T, url string) []string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		t.Fatalf("the test database is on a socket (%s): the function needs TCP", cfg.Host)
	}
	return []string{"--env", "PGHOST=" + cfg.Host, "--env", "PGPORT=" + strconv.Itoa(int(cfg.Port)), "--env", "PGUSER=" + cfg.User,
		"--env", "PGPASSWORD=" + cfg.Password, "--env", "PGDATABASE=" + cfg.Database}
}

// write writes a file below dir.
func write(t *testing.T, dir, name, data string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDeployShowsTheBuildAsItGoes: `fn deploy` prints the build's output
// while it waits (pip's lines of a slow local package here), and --quiet
// leaves it out.
func TestDeployShowsTheBuildAsItGoes(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Parallel()
	dev := startDev(t)
	dev.waitReady(t)
	tok := dev.token(t, "build-watcher", false)
	dir := t.TempDir()
	files := map[string]string{"handler.py": "def handle(event):\n    return 1\n", "requirements.txt": "./slowpkg\n"}
	for name, content := range runtimestest.PyPackage("slowpkg", "") {
		files["slowpkg/"+name] = content
	}
	files["slowpkg/sleep_seconds"] = "2"
	runtimestest.WriteFiles(t, dir, files)
	deploy := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append([]string{"fn", "deploy", dir, "--runtime", "python3.11", "--url", dev.base, "--token", tok}, args...)
		if err := run(context.Background(), args, &out, &errOut); err != nil {
			t.Fatalf("sless %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return errOut.String()
	}
	progress := deploy("--name", "watched")
	line, built := strings.Index(progress, "  Processing ./slowpkg"), strings.Index(progress, "build Succeeded")
	if line < 0 || built < 0 || line > built {
		t.Fatalf("the build's output was not shown while it ran:\n%s", progress)
	}
	if progress = deploy("--name", "quiet", "--quiet"); strings.Contains(progress, "Processing") {
		t.Fatalf("--quiet showed the build's output:\n%s", progress)
	}
}
