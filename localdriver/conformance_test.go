package localdriver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/s3embed"
	"github.com/slessio/sless/workers/drivertest"
)

// TestConformance runs the driver suite against the local driver with real
// python3, node and go, and a real S3 server for the code.
func TestConformance(t *testing.T) {
	d, dir, failures := newDriver(t, localdriver.Options{})
	drivertest.Run(t, drivertest.Harness{
		Driver:        d,
		Code:          newCodeStore(t),
		WaitCrashLoop: failures.Wait,
		Leftovers:     leftovers(dir),
		Drain:         testDrain,
	})
}

// testDrain is the drain time of the test drivers: short, so that cases
// finish fast, but long enough to show that switching versions drops nothing.
const testDrain = time.Second

// newDriver starts a driver in a temporary directory with short timings and
// closes it at the end of the test. Options given win over the test defaults.
func newDriver(t *testing.T, opts localdriver.Options) (*localdriver.Driver, string, *drivertest.FailureRecorder) {
	t.Helper()
	failures := &drivertest.FailureRecorder{}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.OnFailure == nil {
		opts.OnFailure = failures.Record
	}
	if opts.Logger == nil {
		opts.Logger = discard
	}
	if opts.Drain == 0 {
		opts.Drain = testDrain
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = 2 * time.Second
	}
	if opts.RestartBackoff == 0 {
		opts.RestartBackoff = 50 * time.Millisecond
	}
	d, err := localdriver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := processesUnder(opts.Dir); len(left) > 0 {
			t.Errorf("processes left after Close: %v", left)
		}
	})
	return d, opts.Dir, failures
}

// newCodeStore starts an embedded S3 server with a code store on it.
func newCodeStore(t testing.TB) *codestore.Store {
	t.Helper()
	srv, err := s3embed.Start(context.Background(), s3embed.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	st, err := codestore.New(context.Background(), codestore.Config{Endpoint: srv.URL(), AccessKey: "test", SecretKey: "testsecret", Bucket: "code"})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// leftovers reports the processes running from a function's build
// directory and the directory itself.
func leftovers(dir string) func(ctx context.Context, ns, fn string) ([]string, error) {
	return func(ctx context.Context, ns, fn string) ([]string, error) {
		fnDir := filepath.Join(dir, "builds", ns, fn)
		left := processesUnder(fnDir)
		if _, err := os.Stat(fnDir); err == nil {
			left = append(left, "directory "+fnDir)
		}
		return left, nil
	}
}

// processesUnder lists the processes running from below dir, from /proc: a
// sandboxed process by what its mount namespace binds, a plain one by its
// working directory, executable or command line.
func processesUnder(dir string) []string {
	var found []string
	for _, pid := range pidsUnder(dir) {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		found = append(found, fmt.Sprintf("pid %d (%s)", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return found
}

// pidsUnder returns the ids of the processes processesUnder describes.
func pidsUnder(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil // not Linux: nothing to check with
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		base := filepath.Join("/proc", e.Name())
		cwd, _ := os.Readlink(filepath.Join(base, "cwd"))
		exe, _ := os.Readlink(filepath.Join(base, "exe"))
		cmdline, _ := os.ReadFile(filepath.Join(base, "cmdline"))
		if strings.HasPrefix(cwd, dir) || strings.HasPrefix(exe, dir) || strings.Contains(string(cmdline), dir) || bindsFrom(pid, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// bindsFrom reports whether process pid lives in a mount namespace other
// than this process's that has a directory below dir bound into it (a
// sandbox's /app), from the root field of /proc/<pid>/mountinfo: the path
// of a mount's source within its file system.
func bindsFrom(pid int, dir string) bool {
	own, _ := os.Readlink("/proc/self/ns/mnt")
	theirs, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "ns", "mnt"))
	if theirs == "" || theirs == own {
		return false
	}
	rel := pathInFileSystem(dir)
	info, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "mountinfo"))
	for _, line := range strings.Split(string(info), "\n") {
		if f := strings.Fields(line); len(f) > 4 && (f[3] == rel || strings.HasPrefix(f[3], rel+"/")) {
			return true
		}
	}
	return false
}

// pathInFileSystem is dir as mountinfo names it: relative to the root of
// the file system it is on (the same path when that is /).
func pathInFileSystem(dir string) string {
	info, _ := os.ReadFile("/proc/self/mountinfo")
	best, root := "", "/"
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if mp := f[4]; (dir == mp || strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, root = mp, f[3]
		}
	}
	return filepath.Join(root, strings.TrimPrefix(dir, best))
}
