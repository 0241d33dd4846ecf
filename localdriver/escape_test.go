package localdriver_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox"
)

// escapeSample is a hostile tenant's job: it tries each way out of its
// sandbox that was seen to work before there was one, and reports for each
// "denied: <errno>" (the attempt failed), "clean" (it read a file that holds
// nothing of the platform's) or "LEAKED: <what it got>".
const escapeSample = `import errno
import json
import os
import time


def attempt(action):
    try:
        got = action()
    except OSError as e:
        return "denied: " + errno.errorcode.get(e.errno, str(e.errno))
    return "LEAKED: " + repr(got)[:300]


def environ_of(pid, marker):
    def read():
        with open("/proc/%s/environ" % pid, "rb") as f:
            data = f.read()
        if marker.encode() in data:
            return data
        raise OSError(0, "clean")
    return read


def write(path):
    def action():
        with open(path, "w") as f:
            f.write("a stranger was here")
        return path
    return action


def fork_bomb():
    pids = []
    try:
        while len(pids) < 100000:
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            pids.append(pid)
    finally:
        for pid in pids:
            os.kill(pid, 9)
        for pid in pids:
            os.waitpid(pid, 0)
    return "%d processes" % len(pids)


def handle(event):
    marker = event["marker_reversed"][::-1]  # not in its own environment as it is
    r = {
        "other tenant's code": attempt(lambda: open(event["other"]).read()),
        "other tenant's build dir": attempt(lambda: os.listdir(os.path.dirname(event["other"]))),
        "data dir": attempt(lambda: os.listdir(event["data"])),
        "signing key": attempt(lambda: open(event["key"]).read()),
        "database password": attempt(lambda: open(event["password"]).read()),
        "platform's environment": attempt(environ_of(event["platform_pid"], marker)),
        "parent's environment": attempt(environ_of(os.getppid(), marker)),
        "init's environment": attempt(environ_of(1, marker)),
        "own environment": attempt(environ_of("self", marker)),
        "write the version's code": attempt(write("/app/function/handler.py")),
        "write /etc": attempt(write("/etc/sless-was-here")),
        "write /usr": attempt(write("/usr/sless-was-here")),
        "write the data dir": attempt(write(os.path.join(event["data"], "sless-was-here"))),
        "fork bomb": attempt(fork_bomb),
    }
    for k, v in r.items():
        if v == "denied: 0":
            r[k] = "clean"
    r["processes seen"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    r["uid"] = os.getuid()
    with open("/tmp/allowed", "w") as f:  # the one writable place
        r["write /tmp"] = f.write("ok")
    return r
`

// TestSandboxStopsEscapes runs a hostile tenant's job next to another
// tenant's running function, in a driver laid out as `sless dev` lays out
// its data dir (signing key, database password, builds), with a secret in
// the platform's own environment: every attempt must fail inside the
// function, and the function must report the denial.
func TestSandboxStopsEscapes(t *testing.T) {
	data := t.TempDir()
	marker := randomHex(t)
	t.Setenv("SLESS_TEST_PLATFORM_SECRET", marker) // the platform's environment (not parallel: Setenv)
	key := filepath.Join(data, "dev-signing.key")
	password := filepath.Join(data, "postgres", "sless.password")
	for path, content := range map[string]string{key: "the signing key " + marker, password: "the database password " + marker} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := sandbox.New(sandbox.Options{Dir: filepath.Join(data, "sandbox"), MaxProcs: 64})
	if err != nil {
		t.Fatalf("no sandbox here (.ci/run installs bubblewrap): %v", err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	e := setup(t, localdriver.Options{Dir: filepath.Join(data, "local"), Sandbox: sb})

	const tenantA, tenantB = "sless-aaaaaaaaaaaaaaaa", "sless-bbbbbbbbbbbbbbbb"
	victim := e.mustBuild(t, tenantA, "victim", 1, pyConfig(map[string]string{"SECRET": marker}), map[string]string{
		"handler.py": "SECRET = 'source of tenant A'\n\ndef handle(event):\n    return {'instance': 1, 'greeting': SECRET}\n"})
	mustHello(t, e.mustDeploy(t, victim))
	attacker := e.mustBuild(t, tenantB, "attacker", 1, pyConfig(nil), map[string]string{"handler.py": escapeSample})
	event, _ := json.Marshal(map[string]any{
		"marker_reversed": reverse(marker), "data": data, "key": key, "password": password, "platform_pid": os.Getpid(),
		"other": filepath.Join(e.dir, "builds", tenantA, "victim", "v1", "function", "handler.py"),
	})
	res := e.run(t, attacker, string(event))
	if res.ExitCode != 0 {
		t.Fatalf("the job failed (exit %d):\n%s", res.ExitCode, res.Stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lastLineOf(res.Stdout)), &got); err != nil {
		t.Fatalf("job result %q: %v", res.Stdout, err)
	}
	for attempt, outcome := range got {
		s, ok := outcome.(string)
		if !ok || attempt == "write /tmp" {
			continue
		}
		t.Logf("%-26s %s", attempt, s)
		if !strings.HasPrefix(s, "denied: ") && s != "clean" {
			t.Errorf("%s: %s", attempt, s)
		}
	}
	if got["fork bomb"] != "denied: EAGAIN" {
		t.Errorf("fork bomb: %v, want stopped by the process limit (EAGAIN)", got["fork bomb"])
	}
	if got["write /tmp"] != 2.0 {
		t.Errorf("write /tmp: %v, want the private /tmp writable", got["write /tmp"])
	}
	if seen, _ := got["processes seen"].([]any); len(seen) > 2 {
		t.Errorf("the job sees processes %v: want only its sandbox's init and itself", seen)
	}
	if os.Geteuid() == 0 && got["uid"] == 0.0 {
		t.Error("the job runs as host root")
	}
	if data, err := os.ReadFile(filepath.Join(e.dir, "builds", tenantA, "victim", "v1", "function", "handler.py")); err != nil || !strings.Contains(string(data), "source of tenant A") {
		t.Errorf("tenant A's code changed: %q, %v", data, err)
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}
