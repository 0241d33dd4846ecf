package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Timeouts of Kill.
const (
	// killTimeout bounds Kill: a process in uninterruptible sleep (a hung
	// NFS read) cannot die sooner.
	killTimeout = 10 * time.Second
	// freezeTimeout bounds the wait for a group to report itself frozen;
	// the kill round goes on regardless.
	freezeTimeout = 100 * time.Millisecond
)

// Limits are what a group's processes may use together.
type Limits struct {
	// MemoryBytes bounds the memory of all processes together, swap
	// included (0: no limit). Over it, the kernel reclaims, then its OOM
	// killer kills one of them.
	MemoryBytes int64
	// MaxProcs bounds the group's tasks, threads included (0: no limit):
	// fork and clone fail with EAGAIN at the limit.
	MaxProcs int64
	// CPUWeight is the group's share of contended CPU time, 1..10000, the
	// default 100 (0: the default); not applied without a cpu controller.
	CPUWeight int
}

// check says what is wrong with l, if anything.
func (l Limits) check() error {
	switch {
	case l.MemoryBytes < 0:
		return fmt.Errorf("MemoryBytes %d is negative", l.MemoryBytes)
	case l.MaxProcs < 0:
		return fmt.Errorf("MaxProcs %d is negative", l.MaxProcs)
	case l.CPUWeight < 0 || l.CPUWeight > 10000:
		return fmt.Errorf("CPUWeight %d is not within 1..10000", l.CPUWeight)
	}
	return nil
}

// Group is the group of one function instance: a server process and its
// children, one job run or one build step. It is safe for concurrent use.
type Group struct {
	h    *Hierarchy
	name string
	dirs []string // one per h.parents
}

// dir returns the group's directory in the hierarchy of controller, "" when
// none is in use.
func (g *Group) dir(controller string) string {
	for i, p := range g.h.parents {
		if slices.Contains(p.controllers, controller) {
			return g.dirs[i]
		}
	}
	return ""
}

// limit writes l to the group's files.
func (g *Group) limit(l Limits) error {
	w := g.h.host.WriteFile
	mem, pids, cpu := g.dir("memory"), g.dir("pids"), g.dir("cpu")
	if l.MemoryBytes > 0 {
		bytes := strconv.FormatInt(l.MemoryBytes, 10)
		if g.h.version == 2 {
			if err := w(path.Join(mem, "memory.max"), bytes); err != nil {
				return err
			}
			// Absent without swap accounting (CONFIG_MEMCG_SWAP), when
			// swap cannot extend the limit anyway.
			if err := w(path.Join(mem, "memory.swap.max"), "0"); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		} else {
			if err := w(path.Join(mem, "memory.limit_in_bytes"), bytes); err != nil {
				return err
			}
			err := w(path.Join(mem, "memory.memsw.limit_in_bytes"), bytes)
			if errors.Is(err, fs.ErrNotExist) {
				// No swap accounting (swapaccount=0): keep the group's
				// memory out of swap instead.
				err = w(path.Join(mem, "memory.swappiness"), "0")
			}
			if err != nil {
				return err
			}
		}
	}
	if l.MaxProcs > 0 {
		if err := w(path.Join(pids, "pids.max"), strconv.FormatInt(l.MaxProcs, 10)); err != nil {
			return err
		}
	}
	if l.CPUWeight > 0 && cpu != "" {
		file, value := "cpu.weight", l.CPUWeight
		if g.h.version == 1 {
			file, value = "cpu.shares", l.CPUWeight*1024/100
		}
		if err := w(path.Join(cpu, file), strconv.Itoa(value)); err != nil {
			return err
		}
	}
	return nil
}

// SetMemory changes the memory limit of a group that may hold processes
// already (Limits.MemoryBytes; it must be positive): a limit below what they
// use makes the kernel reclaim, then kill one of them.
func (g *Group) SetMemory(bytes int64) error {
	if bytes <= 0 {
		return fmt.Errorf("set the memory limit of cgroup %s: %d bytes", g.name, bytes)
	}
	w, mem, value := g.h.host.WriteFile, g.dir("memory"), strconv.FormatInt(bytes, 10)
	if g.h.version == 2 {
		return w(path.Join(mem, "memory.max"), value)
	}
	// v1 refuses a memory limit above the memory+swap one: the first to
	// write is the one that grows.
	limit, memsw := path.Join(mem, "memory.limit_in_bytes"), path.Join(mem, "memory.memsw.limit_in_bytes")
	files := []string{limit, memsw}
	if cur, err := g.h.host.ReadFile(limit); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(cur)), 10, 64); err == nil && bytes > n {
			files = []string{memsw, limit}
		}
	}
	for _, f := range files {
		if err := w(f, value); err != nil && !(f == memsw && errors.Is(err, fs.ErrNotExist)) {
			return fmt.Errorf("set the memory limit of cgroup %s: %w", g.name, err)
		}
	}
	return nil
}

// Add moves the process pid, and so the children it starts from then on,
// into the group in every hierarchy. Memory the process used before stays
// charged where it was. After an error the process may be in some of the
// hierarchies only: kill it.
func (g *Group) Add(pid int) error {
	for _, dir := range g.dirs {
		if err := g.h.host.WriteFile(path.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("add process %d to cgroup %s: %w", pid, g.name, err)
		}
	}
	return nil
}

// OOMKills returns how many of the group's processes the kernel's OOM
// killer has killed since Create.
func (g *Group) OOMKills() (uint64, error) {
	file := "memory.events"
	if g.h.version == 1 {
		file = "memory.oom_control"
	}
	data, err := g.h.host.ReadFile(path.Join(g.dir("memory"), file))
	if err != nil {
		return 0, fmt.Errorf("read OOM kills of cgroup %s: %w", g.name, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if value, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(value), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read OOM kills of cgroup %s: %w", g.name, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("read OOM kills of cgroup %s: no oom_kill in %s (kernel before 4.13)", g.name, file)
}

// MemoryPeak returns the most memory the group's processes have used
// together since Create, in bytes.
func (g *Group) MemoryPeak() (int64, error) {
	file := "memory.peak"
	if g.h.version == 1 {
		file = "memory.max_usage_in_bytes"
	}
	data, err := g.h.host.ReadFile(path.Join(g.dir("memory"), file))
	if err != nil {
		return 0, fmt.Errorf("read memory peak of cgroup %s: %w", g.name, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read memory peak of cgroup %s: %w", g.name, err)
	}
	return n, nil
}

// Kill sends SIGKILL to every process in the group (and in groups below
// it) and returns once the group is empty, or an error after 10 s (a
// process in uninterruptible sleep dies only when it wakes).
func (g *Group) Kill() error {
	deadline := time.Now().Add(killTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		pids, err := g.procs()
		if err != nil {
			return fmt.Errorf("kill cgroup %s: %w", g.name, err)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill cgroup %s: %d processes left after %s", g.name, len(pids), killTimeout)
		}
		if err := g.killRound(); err != nil {
			return fmt.Errorf("kill cgroup %s: %w", g.name, err)
		}
		time.Sleep(wait)
	}
}

// killRound sends SIGKILL to every process of the group once: with
// cgroup.kill (v2, Linux 5.14) the kernel does it; otherwise the group is
// frozen, so that no process forks between listing and killing, each listed
// process is killed, and the group is thawed so that the kills take effect.
func (g *Group) killRound() error {
	if g.h.version == 2 {
		err := g.h.host.WriteFile(path.Join(g.dirs[0], "cgroup.kill"), "1")
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	thaw, err := g.freeze()
	if err != nil {
		return err
	}
	defer thaw()
	pids, err := g.procs()
	if err != nil {
		return err
	}
	self := g.h.host.Getpid()
	for _, pid := range pids {
		if pid == self {
			continue // never: sless does not Add itself
		}
		if err := g.h.host.Kill(pid); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill process %d: %w", pid, err)
		}
	}
	return nil
}

// freeze freezes the group, when a freezer is at hand (v1's freezer
// controller, v2's cgroup.freeze from Linux 5.2), and returns what thaws it.
func (g *Group) freeze() (func(), error) {
	file, frozen, thawed, done := "", "", "", func() bool { return false }
	if g.h.version == 2 {
		file, frozen, thawed = path.Join(g.dirs[0], "cgroup.freeze"), "1", "0"
		events := path.Join(g.dirs[0], "cgroup.events")
		done = func() bool {
			data, _ := g.h.host.ReadFile(events)
			return slices.Contains(strings.Split(string(data), "\n"), "frozen 1")
		}
	} else if dir := g.dir("freezer"); dir != "" {
		file, frozen, thawed = path.Join(dir, "freezer.state"), "FROZEN", "THAWED"
		done = func() bool {
			data, _ := g.h.host.ReadFile(file)
			return strings.TrimSpace(string(data)) == "FROZEN"
		}
	}
	if file == "" {
		return func() {}, nil
	}
	if err := g.h.host.WriteFile(file, frozen); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return func() {}, nil
		}
		return nil, fmt.Errorf("freeze: %w", err)
	}
	for deadline := time.Now().Add(freezeTimeout); !done() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return func() { _ = g.h.host.WriteFile(file, thawed) }, nil
}

// procs returns the processes in the group and the groups below it, in
// every hierarchy.
func (g *Group) procs() ([]int, error) {
	var all []int
	var walk func(dir string) error
	walk = func(dir string) error {
		pids, err := g.h.pids(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // not made, or removed
		}
		if err != nil {
			return err
		}
		for _, pid := range pids {
			if !slices.Contains(all, pid) {
				all = append(all, pid)
			}
		}
		subs, err := g.h.host.Subdirs(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, s := range subs {
			if err := walk(path.Join(dir, s)); err != nil {
				return err
			}
		}
		return nil
	}
	for _, dir := range g.dirs {
		if err := walk(dir); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// Remove kills what is left in the group and removes its directories.
func (g *Group) Remove() error {
	if err := g.Kill(); err != nil {
		return err
	}
	var err error
	for _, dir := range g.dirs {
		err = errors.Join(err, g.h.rmdir(dir))
	}
	if err != nil {
		return fmt.Errorf("remove cgroup %s: %w", g.name, err)
	}
	return nil
}
