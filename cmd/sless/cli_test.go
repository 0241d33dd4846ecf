package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/localdriver/sandbox/sandboxtest"
)

// handlerV1 is the first version of the quick start's function.
const handlerV1 = `def handle(event):
    if event.get("fail"):
        raise ValueError("asked to fail")
    print("got", event.get("name"))
    return {"hello": event.get("name", "world")}
`

// TestCLIQuickStart runs `sless dev` and drives it with the client commands
// only, as the README's quick start does: login, deploy a Python function
// with an http trigger (following its build), invoke it, read its logs; a
// failing build prints its log and exits non-zero; bad input is refused
// before anything is created; rm leaves no process.
func TestCLIQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("SLESS_URL", "")
	t.Setenv("SLESS_TOKEN", "")
	dev := startDev(t)
	dataDir, ctx := dev.dataDir, context.Background()
	// The login line dev prints, as a user would copy it.
	var login []string
	waitFor(t, 60*time.Second, func() bool {
		for _, l := range strings.Split(dev.stdout.String(), "\n") {
			if f := strings.Fields(l); len(f) == 6 && f[0] == "sless" && f[1] == "login" {
				login = f[1:]
			}
		}
		return login != nil
	})
	sless := func(args ...string) (string, string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(ctx, args, &out, &errOut)
		return out.String(), errOut.String(), err
	}
	if out, _, err := sless(login...); err != nil || !strings.Contains(out, auth.Namespace("demo")) {
		t.Fatalf("sless %s = %q (%v)", strings.Join(login, " "), out, err)
	}

	dir := filepath.Join(t.TempDir(), "hello")
	write := func(name, data string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("handler.py", handlerV1)
	write("secret/key.pem", "not for upload\n")
	write(".slessignore", "secret/\n")
	out, progress, err := sless("fn", "deploy", dir, "--runtime", "python3.11", "--http")
	if err != nil || !strings.Contains(out, "Function hello version 1 is Ready.") || !strings.Contains(out, "URL: http://") {
		t.Fatalf("fn deploy = %q %q (%v)", out, progress, err)
	}
	if !strings.Contains(progress, "hello v1: ") {
		t.Fatalf("fn deploy did not show the build's progress: %q", progress)
	}
	out, _, err = sless("fn", "invoke", "hello", "--data", `{"name":"cli"}`)
	if err != nil || strings.TrimSpace(out) != `{"hello":"cli"}` {
		t.Fatalf("fn invoke = %q (%v)", out, err)
	}
	waitFor(t, 30*time.Second, func() bool {
		out, _, err = sless("fn", "logs", "hello")
		return err == nil && strings.Contains(out, "http POST /") && strings.Contains(out, "| got cli")
	})

	// A second version, then back to the first without a rebuild.
	write("handler.py", "def handle(event):\n    return {'v': 2}\n")
	if out, _, err := sless("fn", "deploy", dir); err != nil || !strings.Contains(out, "version 2 is Ready") {
		t.Fatalf("deploy of version 2 = %q (%v)", out, err)
	}
	if out, _, err := sless("fn", "invoke", "hello"); err != nil || strings.TrimSpace(out) != `{"v":2}` {
		t.Fatalf("invoke of version 2 = %q (%v)", out, err)
	}
	if out, _, err := sless("fn", "versions", "hello"); err != nil || !strings.Contains(out, "Succeeded") || strings.Count(out, "\n") != 3 {
		t.Fatalf("fn versions = %q (%v)", out, err)
	}
	if out, _, err := sless("fn", "rollback", "hello", "--to", "1"); err != nil || !strings.Contains(out, "version 1 is active") {
		t.Fatalf("fn rollback = %q (%v)", out, err)
	}
	waitFor(t, 30*time.Second, func() bool {
		out, _, err := sless("fn", "invoke", "hello")
		return err == nil && strings.Contains(out, "world")
	})
	if out, _, err := sless("fn", "source", "hello", "handler.py"); err != nil || out != handlerV1 {
		t.Fatalf("fn source = %q (%v)", out, err)
	}

	// Triggers: stop and start the http one.
	if _, _, err := sless("trigger", "disable", "hello-http"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool { // the proxy learns it from the read model
		_, _, err := sless("fn", "invoke", "hello")
		return err != nil && strings.Contains(err.Error(), "hello answered 503")
	})
	if _, _, err := sless("trigger", "enable", "hello-http"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool {
		out, _, err := sless("fn", "invoke", "hello")
		return err == nil && strings.Contains(out, "world")
	})
	if out, _, err := sless("trigger", "ls"); err != nil || !strings.Contains(out, "hello-http") || !strings.Contains(out, "true") {
		t.Fatalf("trigger ls = %q (%v)", out, err)
	}

	// Jobs: a result, and a failure with its traceback.
	if out, _, err := sless("job", "run", "hello", "--name", "once", "--event", `{"name":"job"}`, "--wait"); err != nil || strings.TrimSpace(out) != `{"hello": "job"}` {
		t.Fatalf("job run = %q (%v)", out, err)
	}
	_, _, err = sless("job", "run", "hello", "--name", "broken", "--event", `{"fail":true}`, "--wait")
	if err == nil || !strings.Contains(err.Error(), "job broken failed") || !strings.Contains(err.Error(), "ValueError: asked to fail") {
		t.Fatalf("failing job: %v", err)
	}
	if out, _, err := sless("events", "--stream", "function/hello"); err != nil || !strings.Contains(out, "version.activated") {
		t.Fatalf("events = %q (%v)", out, err)
	}

	// fn init scaffolds functions that deploy with no flags (sless.yaml).
	for _, rt := range []string{"nodejs20", "go1.23"} {
		name := "hi-" + strings.TrimRight(strings.ReplaceAll(rt, ".", ""), "0123456789")
		scaffold := filepath.Join(t.TempDir(), name)
		if _, _, err := sless("fn", "init", scaffold, "--runtime", rt); err != nil {
			t.Fatal(err)
		}
		if out, progress, err := sless("fn", "deploy", scaffold); err != nil || !strings.Contains(out, "version 1 is Ready") {
			t.Fatalf("deploy of the %s scaffold = %q %q (%v)", rt, out, progress, err)
		}
		if out, _, err := sless("fn", "invoke", name, "--data", `{"name":"init"}`); err != nil || strings.TrimSpace(out) != `{"hello":"init"}` {
			t.Fatalf("invoke of the %s scaffold = %q (%v)", rt, out, err)
		}
		if _, _, err := sless("fn", "rm", name); err != nil {
			t.Fatal(err)
		}
	}

	// A failing build: its log, exit status non-zero, the old version serves on.
	write("handler.py", "def handle(event):\n    return (\n")
	_, progress, err = sless("fn", "deploy", dir)
	if err == nil || !strings.Contains(err.Error(), "the build of version 3 of hello failed") || !strings.Contains(progress, "SyntaxError") {
		t.Fatalf("failing deploy = %q (%v)", progress, err)
	}
	if out, _, err := sless("fn", "invoke", "hello"); err != nil || !strings.Contains(out, "world") {
		t.Fatalf("version 1 no longer serves after a failed build: %q (%v)", out, err)
	}

	// Bad input: refused before anything is made.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fn", "deploy", filepath.Join(dir, "missing"), "--runtime", "python3.11"}, "no such directory"},
		{[]string{"fn", "deploy", dir, "--name", "other", "--runtime", "cobol85"}, "runtime"},
		{[]string{"fn", "deploy", dir, "--name", "other"}, "say its --runtime"},
		{[]string{"fn", "deploy", dir, "--name", "other", "--runtime", "python3.11", "--cron", "every day"}, "--cron"},
	} {
		if _, _, err := sless(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("sless %s: %v; want an error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if out, _, _ := sless("fn", "ls", "-o", "json"); strings.Contains(out, `"other"`) {
		t.Fatalf("a refused deploy left a function behind: %s", out)
	}

	if _, _, err := sless("fn", "rm", "hello"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool { return len(sandboxtest.PIDs(dataDir)) == 0 })
}
