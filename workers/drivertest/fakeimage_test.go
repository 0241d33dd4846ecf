package drivertest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/s3embed"
)

// TestFakeImageMatchesRealRuntimes holds FakeImageForTest to what the real
// wrappers do with the suite's samples: every prediction is compared with
// the local driver running the sample with real python3, node and go, so
// that a harness relying on the fake (k8sdriver's) checks the driver
// against what a container would really do.
func TestFakeImageMatchesRealRuntimes(t *testing.T) {
	t.Parallel()
	h := localHarnessForFake(t)
	const timeoutSec = 3
	for _, c := range []struct {
		name   string
		s      sample
		events []string // runs; each must end as predicted
	}{
		{"python", pythonSample("v1"), []string{`{"n": 7}`, `{"action": "fail", "n": 5}`, `{"action": "sleep"}`}},
		{"nodejs", nodeSample("v1"), []string{`{"n": 7}`, `{"action": "fail", "n": 5}`, `{"action": "fail"}`}},
		{"go", goSample("v1"), []string{`{"n": 7}`, `{"action": "fail", "n": 5}`}},
		{"node-dependency", nodeDependencySample(), []string{`{}`}},
		{"load-failure", loadFailureSample(), []string{`{}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			x := newFn(t, h, "fake-"+c.name)
			userEnv := map[string]string{"GREETING": "hi there"}
			w, built := x.build(c.s, config(c.s, userEnv, timeoutSec))
			im := fakeImageOf(c.s)
			env := map[string]string{"SLESS_ENTRYPOINT": c.s.entrypoint, "PORT": "8080", "GREETING": "hi there"}
			if built.Failed {
				// The local driver loads the entrypoint at build time: a
				// version that cannot load fails there, with the error
				// its container would print when started.
				server, err := im.Server(env)
				if err != nil {
					t.Fatal(err)
				}
				first, _, _ := strings.Cut(server.Stderr, "\n")
				if server.Ready || !strings.Contains(built.Message+built.Log, first) {
					t.Fatalf("build failed with %q; the fake predicts a server that starts %v, stderr %q", built.Message, server.Ready, first)
				}
				return
			}
			for _, event := range c.events {
				res := x.run(w, event)
				jobEnv := map[string]string{"SLESS_MODE": "job", "SLESS_EVENT": event, "SLESS_TIMEOUT_SEC": "3"}
				for k, v := range env {
					jobEnv[k] = v
				}
				fake, err := im.Job(jobEnv, 1)
				if err != nil {
					t.Fatal(err)
				}
				if res.ExitCode != fake.ExitCode {
					t.Errorf("job %s: exit %d, the fake predicts %d\nstderr: %s", event, res.ExitCode, fake.ExitCode, res.Stderr)
				}
				if fake.ExitCode == 0 && withoutPID(t, lastLine(res.Stdout)) != withoutPID(t, lastLine(fake.Stdout)) {
					t.Errorf("job %s: result %s, the fake predicts %s", event, lastLine(res.Stdout), lastLine(fake.Stdout))
				}
				if printed := strings.TrimSuffix(res.Stdout, lastLine(res.Stdout)+"\n"); fake.ExitCode == 0 && printed != strings.TrimSuffix(fake.Stdout, lastLine(fake.Stdout)+"\n") {
					t.Errorf("job %s: stdout %q, the fake predicts %q", event, res.Stdout, fake.Stdout)
				}
				for _, line := range strings.Split(fake.Stderr, "\n") {
					if !strings.Contains(line, "/app/") && !strings.Contains(res.Stderr, line) { // paths differ
						t.Errorf("job %s: stderr %q lacks the fake's line %q", event, res.Stderr, line)
					}
				}
			}
			server, err := im.Server(env)
			if err != nil {
				t.Fatal(err)
			}
			endpoint, err := x.deploy(w, 1)
			if !server.Ready {
				first, _, _ := strings.Cut(server.Stderr, "\n")
				if domain.ErrorCode(err) != domain.EUNPROCESSABLE || !strings.Contains(domain.ErrorMessage(err), first) {
					t.Errorf("Deploy = %v; the fake predicts a server that exits with %q", err, first)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var real json.RawMessage
			if err := get(context.Background(), client, testutil.EndpointURL(endpoint)+"/", &real); err != nil {
				t.Fatal(err)
			}
			fake, err := im.Answer(env, "/", 1)
			if err != nil {
				t.Fatal(err)
			}
			if withoutPID(t, string(real)) != withoutPID(t, string(fake)) {
				t.Errorf("GET / = %s, the fake predicts %s", real, fake)
			}
			if _, err := im.Answer(env, "/crash", 1); err == nil && c.s.kind() == kindHello {
				t.Error("the fake answers /crash")
			}
		})
	}
	t.Run("go-compile-error", func(t *testing.T) {
		t.Parallel()
		s := goCompileErrorSample()
		x := newFn(t, h, "fake-broken")
		_, res := x.build(s, config(s, nil, 0))
		fake, err := fakeImageOf(s).Build()
		if err != nil {
			t.Fatal(err)
		}
		if !res.Failed || fake.ExitCode == 0 {
			t.Fatalf("build failed %v, the fake predicts exit %d", res.Failed, fake.ExitCode)
		}
		for _, line := range strings.Split(fake.Stderr, "\n") {
			if strings.HasPrefix(line, "./") && !strings.Contains(res.Log, line) {
				t.Errorf("the build log lacks the fake's compiler line %q:\n%s", line, res.Log)
			}
		}
	})
}

// kind returns what FakeImageForTest recognises s as.
func (s sample) kind() sampleKind {
	f, _ := fakeImageOf(s).sample()
	return f.kind
}

// fakeImageOf is the image the fake builds from s, as a harness makes it
// from the build context.
func fakeImageOf(s sample) FakeImageForTest {
	files := map[string]string{"Dockerfile": codestore.Dockerfile("sless/" + string(s.runtime))}
	for k, v := range s.files {
		files[k] = v
	}
	args := map[string]string{}
	if s.runtime == domain.RuntimeGo123 {
		args["SLESS_ENTRYPOINT"] = s.entrypoint
	}
	return FakeImageForTest{Runtime: s.runtime, Files: files, BuildArgs: args}
}

// withoutPID is a JSON answer without its "instance", keys in order.
func withoutPID(t *testing.T, text string) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	delete(v, "instance")
	out, _ := json.Marshal(v)
	return string(out)
}

// localHarnessForFake is a harness on the local driver, closed at the end.
func localHarnessForFake(t *testing.T) Harness {
	srv, err := s3embed.Start(context.Background(), s3embed.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	code, err := codestore.New(context.Background(), codestore.Config{Endpoint: srv.URL(), AccessKey: "test", SecretKey: "testsecret", Bucket: "code"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := localdriver.New(localdriver.Options{Dir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Drain: 100 * time.Millisecond, StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	h := Harness{Driver: d, Code: code, WaitCrashLoop: (&FailureRecorder{}).Wait,
		Leftovers: func(context.Context, string, string) ([]string, error) { return nil, nil }}
	return h.withDefaults()
}
