package main

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/localdriver/sandbox"
	"github.com/slessio/sless/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	return out.String() + errOut.String(), err
}

func TestMigrateAndRebuild(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyDBURL(t)
	out, err := runCmd(t, "migrate", "status", "--database-url", url)
	if err != nil || strings.Count(out, "pending") < 3 || strings.Contains(out, "applied") {
		t.Fatalf("status before up: %v\n%s", err, out)
	}
	out, err = runCmd(t, "migrate", "up", "--database-url", url)
	if err != nil || strings.Count(out, "applied") < 3 || strings.Contains(out, "pending") {
		t.Fatalf("up: %v\n%s", err, out)
	}
	out, err = runCmd(t, "projections", "rebuild", "--database-url", url)
	if err != nil || !strings.Contains(out, "from 0 events") {
		t.Fatalf("rebuild: %v\n%s", err, out)
	}
	if _, err := runCmd(t, "migrate", "sideways", "--database-url", url); err == nil {
		t.Fatal("unknown migrate verb accepted")
	}
}

func TestTokenVerifies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := runCmd(t, "token", "--sub", "alice", "-q", "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	key, err := auth.LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewVerifier(auth.Config{HS256Secret: key})
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Verify(context.Background(), strings.TrimSpace(out))
	if err != nil {
		t.Fatal(err)
	}
	if p.Subject != "alice" || p.Namespace != auth.Namespace("alice") || p.Admin {
		t.Fatalf("principal = %+v", p)
	}
	if _, err := runCmd(t, "token", "--data-dir", dir); err == nil {
		t.Fatal("token without --sub accepted")
	}
}

func TestServeRefusesMissingConfiguration(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--database-url", ""}, "DATABASE_URL"},
		{[]string{"serve", "--database-url", "postgres://x", "--s3-endpoint", ""}, "S3_ENDPOINT"},
		{[]string{"serve", "--database-url", "postgres://x", "--s3-endpoint", "s3:9000", "--jwt-secret", ""}, "SLESS_JWT_SECRET"},
		{[]string{"dev", "--fn-default-max-instances", "0"}, "SLESS_FN_DEFAULT_MAX_INSTANCES"},
		{[]string{"dev", "--namespace-max-instances", "-1"}, "SLESS_NAMESPACE_MAX_INSTANCES"},
		{[]string{"dev", "--scale-panic-window", "2m"}, "SLESS_SCALE_PANIC_WINDOW"},
		{[]string{"dev", "--warm-pool", "-1"}, "SLESS_WARM_POOL"},
	} {
		_, err := runCmd(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.args, err, c.want)
		}
	}
}

// TestServeRefusesDevelopmentCredentials: the keys earlier development
// setups shipped are known to anyone; serve starts with them only when told
// it is one (and then fails later, here at the database nobody serves).
func TestServeRefusesDevelopmentCredentials(t *testing.T) {
	t.Parallel()
	base := []string{"serve", "--data-dir", t.TempDir(), "--s3-endpoint", "127.0.0.1:1", "--s3-access-key", "sless"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--database-url", "postgres://sless:sless@127.0.0.1:1/sless", "--s3-secret-key", "own", "--jwt-secret", strings.Repeat("k", 32)}, `PostgreSQL password "sless"`},
		{[]string{"--database-url", "postgres://u:own@127.0.0.1:1/sless", "--s3-secret-key", "sless-dev-secret", "--jwt-secret", strings.Repeat("k", 32)}, `the S3 secret key "sless-dev-secret"`},
		{[]string{"--database-url", "postgres://u:own@127.0.0.1:1/sless", "--s3-secret-key", "own", "--jwt-secret", "change-me"}, `the JWT secret "change-me"`},
	} {
		_, err := runCmd(t, append(slices.Clone(base), c.args...)...)
		if err == nil || !strings.Contains(err.Error(), "known development credentials") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want a refusal naming %s", c.args, err, c.want)
		}
		_, err = runCmd(t, append(append(slices.Clone(base), c.args...), "--allow-dev-credentials", "--shutdown-timeout", "1s")...)
		if err == nil || strings.Contains(err.Error(), "known development credentials") {
			t.Errorf("%v with --allow-dev-credentials: %v; want it past the check (failing at the database)", c.args, err)
		}
	}
}

func TestOpenDriverRejectsUnknownDriver(t *testing.T) {
	t.Parallel()
	_, err := openDriver(context.Background(), &config{Driver: "nomad"}, false, nil, driver.Reports{})
	if err == nil || !strings.Contains(err.Error(), "local or kubernetes") {
		t.Fatalf("err = %v", err)
	}
}

// TestSandboxRequiredByServe: without bubblewrap, dev runs functions
// unsandboxed with one loud warning, serve refuses to start unless told
// --insecure-no-sandbox; with it, the sandbox is bubblewrap (not in -short,
// which may run where bubblewrap is missing).
func TestSandboxRequiredByServe(t *testing.T) {
	if !testing.Short() {
		var logs bytes.Buffer
		sb, err := openSandbox(&config{DataDir: t.TempDir()}, false, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil || sb.Mode() != sandbox.ModeBubblewrap {
			t.Fatalf("serve's sandbox where bubblewrap is installed: %v, %v (is bubblewrap installed? .ci/run installs it)", sb, err)
		}
	}
	t.Setenv("PATH", t.TempDir()) // no bwrap on it
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	c := &config{DataDir: t.TempDir()}
	if _, err := openSandbox(c, false, log); err == nil || !strings.Contains(err.Error(), "--insecure-no-sandbox") || !strings.Contains(err.Error(), "bubblewrap") {
		t.Fatalf("serve without bubblewrap: %v, want a refusal naming bubblewrap and --insecure-no-sandbox", err)
	}
	sb, err := openSandbox(c, true, log)
	if err != nil || sb.Mode() != sandbox.ModeNone {
		t.Fatalf("dev without bubblewrap: %v, %v; want it to run unsandboxed", sb, err)
	}
	if n := strings.Count(logs.String(), "INSECURE"); n != 1 {
		t.Fatalf("dev without bubblewrap logged %d INSECURE warnings, want 1:\n%s", n, logs.String())
	}
	c.NoSandbox = true
	if sb, err := openSandbox(c, false, log); err != nil || sb.Mode() != sandbox.ModeNone {
		t.Fatalf("serve --insecure-no-sandbox: %v, %v", sb, err)
	}
}
