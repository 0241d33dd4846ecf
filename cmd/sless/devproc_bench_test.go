package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/localdriver/sandbox/sandboxtest"
	"github.com/slessio/sless/store/pgtest"
)

// devProcess is `sless dev` as its own process (this test binary run as
// the sless binary, see TestRunMain) on a free port, a data dir of its own
// and a pgtest database: what a user runs, measured from outside.
type devProcess struct {
	*slessProcess
	base    string
	dataDir string
}

// startDevProcess starts `sless dev` with the README's defaults (the
// bubblewrap sandbox where it is installed, the warm pool) plus args and
// waits until it is ready. It is stopped with SIGTERM when tb ends, and tb
// fails if a function process outlives it.
func startDevProcess(tb testing.TB, args ...string) *devProcess {
	tb.Helper()
	dev, base := devArgs(tb, pgtest.NewDBURL(tb))
	p := &devProcess{slessProcess: startSless(tb, append(dev, args...)...), base: base, dataDir: dev[2]}
	tb.Cleanup(func() { // before startSless's SIGKILL: a stop that stops the functions too
		_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(60 * time.Second):
			tb.Errorf("sless dev did not stop within 60 s")
		}
		if pids := sandboxtest.PIDs(p.dataDir); len(pids) > 0 {
			tb.Errorf("function processes %v outlived sless dev", pids)
		}
		if tb.Failed() {
			tb.Logf("sless dev output:\n%s", p.stderr.String())
		}
	})
	testutil.WaitFor(tb, 90*time.Second, func() bool {
		select {
		case <-p.exited:
			tb.Fatalf("sless dev exited: %v\n%s", p.err, p.stderr.String())
		default:
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

// pid is the sless process's id.
func (p *devProcess) pid() int { return p.cmd.Process.Pid }

// tenant returns a client of sub's namespace, ensured.
func (p *devProcess) tenant(tb testing.TB, sub string) *client.Client {
	tb.Helper()
	key, err := auth.LoadOrCreateKey(p.dataDir)
	if err != nil {
		tb.Fatal(err)
	}
	tok, err := auth.Mint(key, sub, time.Hour, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := client.New(p.base, tok)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := c.EnsureNamespace(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return c
}

// procStatus returns the numeric fields of /proc/<pid>/status: sizes
// (VmRSS, RssAnon, RssFile, VmHWM, ...) in bytes, counts (Threads) as they are.
func procStatus(tb testing.TB, pid int) map[string]int64 {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		name, rest, _ := strings.Cut(line, ":")
		fields := strings.Fields(rest)
		if len(fields) == 0 || len(fields) > 2 {
			continue
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		switch {
		case err != nil:
		case len(fields) == 1:
			out[name] = v
		case fields[1] == "kB":
			out[name] = v << 10
		}
	}
	return out
}

// childPIDs returns the processes whose parent is pid.
func childPIDs(pid int) []int {
	var out []int
	for _, p := range testutil.AllPIDs() {
		if f := testutil.StatFields(p); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// durPct returns the p-th percentile of durations (sorting a copy).
func durPct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// mib is n bytes in MiB.
func mib(n int64) float64 { return float64(n) / (1 << 20) }

// verdict says whether got ≤ target.
func verdict(got, target float64) string {
	if got <= target {
		return "met"
	}
	return "missed"
}
