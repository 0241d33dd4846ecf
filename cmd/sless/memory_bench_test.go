package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// memDumpEnv names a directory: a process of this test binary started with
// it (the sless of BenchmarkControlPlaneMemory) answers each SIGUSR1 with a
// garbage collection that returns free memory to the system
// (debug.FreeOSMemory), then writes heap-<n>.pprof and memstats-<n>.json
// there (n counting from 0), the latter last.
const memDumpEnv = "SLESS_BENCH_MEMDUMP"

// memDump is what memstats-<n>.json holds.
type memDump struct {
	runtime.MemStats
	Goroutines int
}

func init() {
	dir := os.Getenv(memDumpEnv)
	if dir == "" {
		return
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGUSR1)
	go func() {
		for n := 0; ; n++ {
			<-signals
			debug.FreeOSMemory()
			if f, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%d.pprof", n))); err == nil {
				_ = pprof.WriteHeapProfile(f)
				f.Close()
			}
			var m memDump
			runtime.ReadMemStats(&m.MemStats)
			m.Goroutines = runtime.NumGoroutine()
			data, _ := json.Marshal(m)
			tmp := filepath.Join(dir, fmt.Sprintf(".memstats-%d.json", n))
			if os.WriteFile(tmp, data, 0o600) == nil {
				_ = os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("memstats-%d.json", n)))
			}
		}
	}()
}

// BenchmarkControlPlaneMemory measures the memory of the control plane: the
// resident set (VmRSS of /proc/<pid>/status) of the `sless dev` process (its
// own process: API, workers, proxy, the embedded S3 server and the local
// driver; PostgreSQL is the test server, another process, not counted; the
// warm pool's function processes are its children, listed apart), idle with
// 1,000 functions created through the API in 20 namespaces, 100 of them
// (5 a namespace) with a Python zip uploaded and built, none with a trigger.
// Each figure is read after the process settled (10 s) and a garbage
// collection that returns free memory to the system (a SIGUSR1 hook of this
// test binary, memDumpEnv), next to the same process idle before the first
// function, its reference. Target (issue 34): RSS idle with 1,000 functions
// ≤ 100 MiB. The heap profile's top is logged. -short: 20 functions in 2
// namespaces, 2 with code, 1 s settling, no target.
//
//	go test ./cmd/sless -run '^$' -bench ControlPlaneMemory -benchtime 1x -v
func BenchmarkControlPlaneMemory(b *testing.B) {
	if b.N > 1 { // one measured run per process, whatever b.N is
		b.ReportMetric(0, "ns/op")
		return
	}
	tenants, perTenant, withCode, settle := 20, 50, 5, 10*time.Second
	if testing.Short() {
		tenants, perTenant, withCode, settle = 2, 10, 1, time.Second
	}
	dumps := b.TempDir()
	b.Setenv(memDumpEnv, dumps)
	dev := startDevProcess(b)
	m := &memProbe{b: b, pid: dev.pid(), dir: dumps}

	time.Sleep(settle)
	idle := m.read()

	clients := make([]*client.Client, tenants)
	for i := range clients {
		clients[i] = dev.tenant(b, fmt.Sprintf("bench-mem-%d", i))
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, tenants)
	for i, c := range clients {
		zips := make([][]byte, withCode)
		for k := range zips {
			zips[k] = ziptest.Files(b, map[string]string{"handler.py": fmt.Sprintf(
				"import json\n\nNAME = %q\n\ndef handle(event):\n    return {'hello': NAME, 'event': json.dumps(event)}\n", fnName(i, k))})
		}
		wg.Go(func() { errs <- createFunctions(c, i, perTenant, zips) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	created := time.Since(start)
	for _, c := range clients { // every upload built: the workers idle again
		testutil.WaitFor(b, 5*time.Minute, func() bool {
			fns, err := c.ListFunctions(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			built := 0
			for _, f := range fns {
				if f.ActiveVersion > 0 {
					built++
				}
				if f.LastBuildFailure != nil {
					b.Fatalf("%s: build failed: %+v", f.Name, f.LastBuildFailure)
				}
			}
			return built == withCode
		})
	}
	ready := time.Since(start)
	time.Sleep(settle)
	full := m.read()

	n := tenants * perTenant
	perFn := float64(full.rssAfterGC-idle.rssAfterGC) / float64(n) / 1024
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(mib(full.rssAfterGC), "rss-MiB")
	b.ReportMetric(mib(idle.rssAfterGC), "rss-empty-MiB")
	b.ReportMetric(mib(full.rssBeforeGC), "rss-before-gc-MiB")
	b.ReportMetric(mib(full.heapInuse), "heap-inuse-MiB")
	b.ReportMetric(perFn, "KiB/function")
	target := fmt.Sprintf("target ≤ 100 MiB): %s", verdict(mib(full.rssAfterGC), 100))
	if testing.Short() {
		target = "smoke: no target)"
	}
	b.Logf("sless dev RSS idle with %d functions (%d built): %.1f MiB after a GC (%s; %.1f MiB before it; idle with none, the reference: %.1f MiB; %+.1f KiB a function)",
		n, tenants*withCode, mib(full.rssAfterGC), target, mib(full.rssBeforeGC), mib(idle.rssAfterGC), perFn)
	b.Logf("load average %s; created in %.1f s, built in %.1f s; with %d functions: RssAnon %.1f MiB, RssFile %.1f MiB, VmHWM %.1f MiB; Go heap in use %.1f MiB, stacks %.1f MiB, runtime total (Sys) %.1f MiB, %d goroutines, %d threads",
		testutil.LoadAverage(), created.Seconds(), ready.Seconds(), n, mib(full.rssAnon), mib(full.rssFile), mib(full.hwm), mib(full.heapInuse), mib(full.stackInuse), mib(full.sys), full.goroutines, full.threads)
	b.Logf("other processes: PostgreSQL is the test server (not counted); the embedded S3 server runs inside sless; its children now: %s", describeTree(dev.pid()))
	if !testing.Short() {
		b.Logf("heap in use by allocation site, with %d functions (go tool pprof -top -sample_index=inuse_space):\n%s", n, pprofTop(b, full.profile, 15))
	}
}

// fnName is the name of function i of tenant t.
func fnName(t, i int) string { return fmt.Sprintf("fn-%d-%d", t, i) }

// createFunctions creates perTenant functions of tenant t through c,
// uploading zips to the first len(zips) of them.
func createFunctions(c *client.Client, t, perTenant int, zips [][]byte) error {
	ctx := context.Background()
	for i := range perTenant {
		name := fnName(t, i)
		if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: name, Runtime: "python3.11",
			EnvVars: map[string]string{"GREETING": "hello", "LEVEL": strconv.Itoa(i)}}); err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
		if i < len(zips) {
			if _, err := c.Upload(ctx, name, zips[i]); err != nil {
				return fmt.Errorf("upload %s: %w", name, err)
			}
		}
	}
	return nil
}

// memProbe reads the memory of the sless process pid, whose SIGUSR1 hook
// writes into dir.
type memProbe struct {
	b   *testing.B
	pid int
	dir string
	n   int // dumps taken
}

// memFigures are one reading of memProbe.
type memFigures struct {
	rssBeforeGC, rssAfterGC, rssAnon, rssFile, hwm int64
	heapInuse, stackInuse, sys                     int64
	goroutines, threads                            int
	profile                                        string // heap profile file
}

// read takes the process's RSS, then has it collect garbage and dump its
// heap, and takes the RSS again.
func (m *memProbe) read() memFigures {
	m.b.Helper()
	before := procStatus(m.b, m.pid)
	if err := syscall.Kill(m.pid, syscall.SIGUSR1); err != nil {
		m.b.Fatal(err)
	}
	statsFile := filepath.Join(m.dir, fmt.Sprintf("memstats-%d.json", m.n))
	var data []byte
	testutil.WaitFor(m.b, 30*time.Second, func() bool {
		var err error
		data, err = os.ReadFile(statsFile)
		return err == nil
	})
	var stats memDump
	if err := json.Unmarshal(data, &stats); err != nil {
		m.b.Fatal(err)
	}
	time.Sleep(time.Second) // the scavenger's returns show in /proc
	after := procStatus(m.b, m.pid)
	f := memFigures{rssBeforeGC: before["VmRSS"], rssAfterGC: after["VmRSS"], rssAnon: after["RssAnon"], rssFile: after["RssFile"],
		hwm: after["VmHWM"], heapInuse: int64(stats.HeapInuse), stackInuse: int64(stats.StackInuse), sys: int64(stats.Sys),
		goroutines: stats.Goroutines, threads: int(after["Threads"]), profile: filepath.Join(m.dir, fmt.Sprintf("heap-%d.pprof", m.n))}
	m.n++
	return f
}

// describeTree lists pid's descendants with their command and RSS.
func describeTree(pid int) string {
	var parts []string
	var total int64
	var walk func(int)
	walk = func(p int) {
		for _, c := range childPIDs(p) {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c))
			var rss int64
			if f := testutil.StatFields(c); len(f) > 21 {
				pages, _ := strconv.ParseInt(f[21], 10, 64) // rss, field 24
				rss = pages * int64(os.Getpagesize())
			}
			total += rss
			parts = append(parts, fmt.Sprintf("%s %.1f MiB", strings.TrimSpace(string(comm)), mib(rss)))
			walk(c)
		}
	}
	walk(pid)
	if len(parts) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d processes, %.1f MiB together (%s)", len(parts), mib(total), strings.Join(parts, ", "))
}

// pprofTop is the first lines of `go tool pprof -top` of a heap profile.
func pprofTop(b *testing.B, profile string, lines int) string {
	b.Helper()
	out, err := exec.Command("go", "tool", "pprof", "-top", "-sample_index=inuse_space", profile).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("go tool pprof: %v\n%s", err, out)
	}
	all := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.Join(all[:min(len(all), lines)], "\n")
}
