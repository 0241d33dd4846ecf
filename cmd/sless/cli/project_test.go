package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProjectFileErrorsNameFileLineField: a bad sless.yaml is refused
// before anything is sent, naming the file, the line and the field.
func TestProjectFileErrorsNameFileLineField(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, c := range []struct{ yaml, want string }{
		{"name: hello\nruntime: cobol85\n", "sless.yaml:2: runtime: "},
		{"name: Hello_World\n", "sless.yaml:1: name: "},
		{"runtime: python3.11\nmemory: 10\n", "sless.yaml:2: memory: must be between 64 and 4096"},
		{"runtime: python3.11\ntriggers:\n  cron: every day\n", "sless.yaml:3: triggers.cron: "},
		{"runtime: python3.11\nentrypoint: nodot\n", "sless.yaml:2: entrypoint: "},
		{"runtime: python3.11\nenv:\n  1BAD: x\n", "sless.yaml:2: env: "},
		{"runtime: python3.11\nmemroy: 128\n", `sless.yaml:2: unknown field "memroy" (did you mean "memory"?)`},
		{"name: hello\n\ntimeot: 30\n", `sless.yaml:3: unknown field "timeot" (did you mean "timeout"?)`},
		{"triggers:\n  htp: true\n", `sless.yaml:2: unknown field "htp" (did you mean "http"?)`},
		{"name: hello\nmemory: lots\n", `sless.yaml:2: memory: "lots" is not a whole number`},
		{"name: hello\nenv: [1, 2]\n", "sless.yaml:2: env: a list is not a mapping of names to values"},
		{"name: hello\n  bad: [\n", "sless.yaml:2: mapping values are not allowed"},
		{"runtime: python3.11\nasync:\n  max_retries: 11\n", "sless.yaml:3: async.max_retries: must be between 0 and 10 (retries), not 11"},
		{"async:\n  max_event_age: 30\n", "sless.yaml:2: async.max_event_age: must be between 60 and 21600 (seconds), not 30"},
		{"async:\n  max_concurrency: -1\n", "sless.yaml:2: async.max_concurrency: must be between 0 and 10000"},
		{"async:\n  max_retires: 1\n", `sless.yaml:2: unknown field "max_retires" (did you mean "max_retries"?)`},
		{"async:\n  max_event_age: 1h\n", `sless.yaml:2: async.max_event_age: "1h" is not a whole number`},
		{"async: 3\n", "sless.yaml:1: async: "},
		{"runtime: python3.11\nmin_instances: 1001\n", "sless.yaml:2: min_instances: 1001 is out of range; use 0 (scale to zero when idle) to 1000 instances"},
		{"max_instances: 2\nmin_instances: 3\n", "sless.yaml:2: min_instances: 3 is more than max_instances (2)"},
		{"max_instances: -1\n", "sless.yaml:1: max_instances: -1 is out of range"},
		{"concurrency: 1001\n", "sless.yaml:1: concurrency: 1001 is out of range"},
		{"min_instance: 1\n", `sless.yaml:1: unknown field "min_instance" (did you mean "min_instances"?)`},
		{"concurrency: many\n", `sless.yaml:1: concurrency: "many" is not a whole number`},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "handler.py"), []byte("def handle(e):\n    return 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sless.yaml"), []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := sless(t, "fn", "deploy", dir, "--url", "http://127.0.0.1:1", "--token", "x.y.z")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Join(dir, "sless.yaml")) {
			t.Errorf("%q: %v; want an error naming the file and %q", c.yaml, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "cli.") || strings.Contains(err.Error(), "!!") || strings.Contains(err.Error(), "unmarshal")) {
			t.Errorf("%q: %v names the parser's Go types", c.yaml, err)
		}
	}
}

// TestInitScaffolds: fn init writes a handler in the runtime's shape, a
// sless.yaml that deploy accepts and a .slessignore; it refuses a directory
// that is not empty and an unknown runtime.
func TestInitScaffolds(t *testing.T) {
	base := t.TempDir()
	for rt, file := range map[string]string{"python3.11": "handler.py", "nodejs20": "index.js", "go1.23": "handler.go"} {
		dir := filepath.Join(base, strings.ReplaceAll(strings.ReplaceAll(rt, ".", ""), "python", "py"))
		out, err := sless(t, "fn", "init", dir, "--runtime", rt)
		if err != nil || !strings.Contains(out, "sless fn deploy "+dir) {
			t.Fatalf("init %s = %q (%v)", rt, out, err)
		}
		for _, f := range []string{file, "sless.yaml", ".slessignore"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("init %s wrote no %s: %v", rt, f, err)
			}
		}
		if _, err := sless(t, "fn", "init", dir, "--runtime", rt); err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Errorf("init into a non-empty directory: %v", err)
		}
	}
	if _, err := sless(t, "fn", "init", filepath.Join(base, "x"), "--runtime", "cobol85"); err == nil || !strings.Contains(err.Error(), "--runtime") {
		t.Errorf("init with an unknown runtime: %v", err)
	}
}
