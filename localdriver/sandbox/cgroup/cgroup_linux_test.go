package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
)

func TestMemoryLimitCoversAllProcessesOfTheGroup(t *testing.T) {
	t.Parallel()
	const limit, processes = 64 << 20, 5 // each touches 30 MiB: together 150 MiB
	const bypass = 1 << 20
	h := newHierarchy(t)
	// run starts the processes in a group with memory limit l and returns
	// how many were killed and by what, the group's OOM kills and its peak.
	run := func(t *testing.T, l Limits) (killed int, oomKills uint64, peak int64) {
		g := mustCreate(t, h, l)
		cmds := make([]*exec.Cmd, processes)
		for i := range cmds {
			cmds[i] = helperCmd("alloc")
			startBlocked(t, g, cmds[i])
		}
		for _, cmd := range cmds {
			ps := wait(t, cmd, 30*time.Second)
			switch sig := killedBy(ps); {
			case sig == syscall.SIGKILL:
				killed++
			case sig != 0 || ps.ExitCode() != 0:
				t.Errorf("pid %d: %s", ps.Pid(), ps)
			}
		}
		var err error
		if oomKills, err = g.OOMKills(); err != nil {
			t.Fatal(err)
		}
		if peak, err = g.MemoryPeak(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d of %d processes killed, OOMKills %d, peak %d MiB", killed, processes, oomKills, peak>>20)
		return killed, oomKills, peak
	}

	t.Run("limited", func(t *testing.T) {
		killed, oomKills, peak := run(t, Limits{MemoryBytes: limit})
		if killed == 0 || oomKills == 0 {
			t.Errorf("%d processes of 30 MiB each ran together under a limit of 64 MiB: killed %d, OOMKills %d", processes, killed, oomKills)
		}
		if oomKills != uint64(killed) {
			t.Errorf("OOMKills = %d, but %d processes were killed", oomKills, killed)
		}
		// The kernel lets a dying OOM victim charge its last few pages
		// over the limit so that it can exit (try_charge_memcg: "Allow
		// dying and OOM-killed tasks to bypass the last charges"): seen
		// 2 to 6 pages here, against the 150 MiB the processes want.
		if peak > limit+bypass {
			t.Errorf("the group used %d bytes, over its limit %d", peak, limit)
		}
	})
	t.Run("unlimited", func(t *testing.T) { // what the limit changes
		killed, oomKills, peak := run(t, Limits{})
		if killed != 0 || oomKills != 0 {
			t.Errorf("without a limit: killed %d, OOMKills %d", killed, oomKills)
		}
		if peak <= limit {
			t.Errorf("without a limit the processes used %d bytes together: the test does not exceed the limit", peak)
		}
	})
}

func TestMaxProcsStopsForks(t *testing.T) {
	t.Parallel()
	py, err := python()
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	h := newHierarchy(t)
	// forks runs a process forking sleeping children until fork fails or it
	// has 32, in a group with limits l, and returns what it printed: the
	// children it made and errno.
	forks := func(t *testing.T, l Limits) string {
		g := mustCreate(t, h, l)
		cmd := exec.Command(py, "-c", `
import os, sys, time
os.read(3, 1)
n = 0
try:
    while n < 32:
        if os.fork() == 0:
            os.closerange(0, 3)
            time.sleep(60)
            os._exit(0)
        n += 1
    print(n, 0)
except OSError as e:
    print(n, e.errno)
`)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		startBlocked(t, g, cmd)
		if ps := wait(t, cmd, 30*time.Second); !ps.Success() {
			t.Fatalf("%s: %s", ps, out.String())
		}
		return strings.TrimSpace(out.String())
	}

	t.Run("limited", func(t *testing.T) {
		// The forking process is the eighth.
		if out, want := forks(t, Limits{MaxProcs: 8}), fmt.Sprintf("7 %d", syscall.EAGAIN); out != want {
			t.Errorf("children made and errno = %q, want %q", out, want)
		}
	})
	t.Run("unlimited", func(t *testing.T) {
		if out := forks(t, Limits{}); out != "32 0" {
			t.Errorf("children made and errno = %q, want 32 0", out)
		}
	})
}

func TestKillEndsTheWholeTree(t *testing.T) {
	t.Parallel()
	h := newHierarchy(t)
	g := mustCreate(t, h, Limits{})
	cmd := helperCmd("tree")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startBlocked(t, g, cmd)
	if _, err := out.Read(make([]byte, 1)); err != nil { // "started"
		t.Fatalf("the tree did not start: %v", err)
	}
	pids, err := g.procs()
	if err != nil {
		t.Fatal(err)
	}
	sessions := map[string]bool{}
	for _, pid := range pids {
		if st := stat(pid); len(st) > 3 {
			sessions[st[3]] = true
		}
	}
	if len(pids) != 3 || len(sessions) != 2 {
		t.Fatalf("the group holds %v in sessions %v: want the helper, its child and a grandchild in a session of its own", pids, sessions)
	}

	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if st := stat(pid); st != nil && st[0] != "Z" {
			t.Errorf("pid %d is still there after Kill (state %s)", pid, st[0])
		}
	}
	if left, err := g.procs(); err != nil || len(left) != 0 {
		t.Errorf("the group holds %v after Kill (%v)", left, err)
	}
	if ps := wait(t, cmd, 5*time.Second); killedBy(ps) != syscall.SIGKILL {
		t.Errorf("the helper ended with %s", ps)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range g.dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left after Remove (%v)", dir, err)
		}
	}
}

func TestNewRemovesWhatACrashedRunLeft(t *testing.T) {
	t.Parallel()
	name := uniqueName()
	crashed, err := New(Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crashed.Close() }) // should the second New fail
	g := mustCreate(t, crashed, Limits{MemoryBytes: 64 << 20})
	cmd := helperCmd("sleep")
	startBlocked(t, g, cmd)
	// The process ends without Close; a second run starts with the same Name.

	h, err := New(Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mustClose(t, h) })
	if ps := wait(t, cmd, 5*time.Second); killedBy(ps) != syscall.SIGKILL {
		t.Errorf("the process left in the group ended with %s", ps)
	}
	for _, dir := range g.dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left after New (%v)", dir, err)
		}
	}
	for _, p := range h.parents {
		if _, err := os.Stat(p.dir); err != nil {
			t.Errorf("the parent group: %v", err)
		}
	}
}

// TestNewSweepsWhatDeadPlatformsLeft: groups of other platforms that died
// (another Name, the same prefix) are removed when they hold no process,
// and kept when they do; a live platform whose empty parent was swept makes
// it again.
func TestNewSweepsWhatDeadPlatformsLeft(t *testing.T) {
	t.Parallel()
	prefix := uniqueName() + "-"
	dead, err := New(Options{Name: prefix + "dead"})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, dead, Limits{}) // an empty group left behind
	busy, err := New(Options{Name: prefix + "busy"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mustClose(t, busy) })
	g := mustCreate(t, busy, Limits{})
	cmd := helperCmd("sleep")
	startBlocked(t, g, cmd)
	idle, err := New(Options{Name: prefix + "idle"}) // alive, no group yet
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mustClose(t, idle) })

	// Only groups older than SweepAfter go: a live platform's is empty
	// for a moment after Create.
	if h, err := New(Options{Name: prefix + "early", Sweep: prefix}); err != nil {
		t.Fatal(err)
	} else {
		mustClose(t, h)
	}
	for _, p := range dead.parents {
		if _, err := os.Stat(p.dir); err != nil {
			t.Fatalf("a group made a moment ago was swept: %v", err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	h, err := New(Options{Name: prefix + "new", Sweep: prefix, SweepAfter: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mustClose(t, h) })
	for _, p := range dead.parents {
		if _, err := os.Stat(p.dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the dead platform's %s is left (%v)", p.dir, err)
		}
	}
	for _, dir := range g.dirs {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("a group holding a process was swept: %v", err)
		}
	}
	if cmd.ProcessState != nil {
		t.Errorf("the busy group's process ended: %s", cmd.ProcessState)
	}
	if _, err := idle.Create("after-the-sweep", Limits{MaxProcs: 8}); err != nil {
		t.Errorf("Create in a platform whose empty parent was swept: %v", err)
	}
}

func TestCPUWeight(t *testing.T) {
	t.Parallel()
	h := newHierarchy(t)
	if !slices.ContainsFunc(h.parents, func(p parent) bool { return slices.Contains(p.controllers, "cpu") }) {
		t.Skip("no cpu controller: CPUWeight is not applied")
	}
	for weight, shares := range map[int]string{1: "10", 50: "512", 100: "1024", 10000: "102400"} {
		g, err := h.Create(fmt.Sprintf("weight-%d", weight), Limits{CPUWeight: weight})
		if err != nil {
			t.Fatal(err)
		}
		file, want := "cpu.shares", shares
		if h.version == 2 {
			file, want = "cpu.weight", strconv.Itoa(weight)
		}
		data, err := os.ReadFile(filepath.Join(g.dir("cpu"), file))
		if got := strings.TrimSpace(string(data)); err != nil || got != want {
			t.Errorf("CPUWeight %d: %s = %q (%v), want %s", weight, file, got, err, want)
		}
	}
}

func TestCreateChecksItsArguments(t *testing.T) {
	t.Parallel()
	h := newHierarchy(t)
	for _, c := range []struct {
		name string
		l    Limits
		code string
	}{
		{"../x", Limits{}, domain.EINVALID},
		{"", Limits{}, domain.EINVALID},
		{selfLeaf, Limits{}, domain.EINVALID},
		{"a", Limits{MemoryBytes: -1}, domain.EINVALID},
		{"a", Limits{CPUWeight: 10001}, domain.EINVALID},
	} {
		if _, err := h.Create(c.name, c.l); domain.ErrorCode(err) != c.code {
			t.Errorf("Create(%q, %+v) = %v, want %s", c.name, c.l, err, c.code)
		}
	}
	if _, err := h.Create("twice", Limits{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create("twice", Limits{}); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Errorf("Create of an existing group = %v, want %s", err, domain.ECONFLICT)
	}
}
