package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slessio/sless/domain"
)

// rmdirTimeout bounds the retries of an rmdir that fails with EBUSY: the
// kernel counts a killed process in its group until it has fully exited.
const rmdirTimeout = 2 * time.Second

// Options configures New.
type Options struct {
	// Name is sless's parent group, e.g. "sless-<8 hex of the data dir>",
	// created below this process's own group in each hierarchy. New and
	// Close remove every group below it: one platform per Name.
	Name string
	// Sweep, when set, is the prefix of the groups of other platforms (such
	// as "sless-sb-"): New also removes those of them next to its own that
	// hold no process, which platforms that died left and whose data dirs
	// may be gone, so that no later run of theirs clears them. A group
	// holding a process is never touched (the kernel refuses), and a
	// platform whose empty parent was removed makes it again on Create.
	Sweep string
	// SweepAfter is how long a group must have been there before a sweep
	// removes it (DefaultSweepAfter): a live platform's group is empty only
	// for the moment between Create and Add.
	SweepAfter time.Duration
}

// DefaultSweepAfter is Options.SweepAfter's default.
const DefaultSweepAfter = time.Minute

// Hierarchy is where sless makes groups: its parent group in the unified
// hierarchy (v2) or in each v1 hierarchy it uses. It is safe for concurrent use.
type Hierarchy struct {
	host    host
	name    string
	version int      // 1 or 2
	parents []parent // v2: one
	moved   string   // v2: the leaf New moved this process into, "" if none
}

// parent is sless's parent group in one hierarchy.
type parent struct {
	dir         string   // its directory
	controllers []string // the controllers sless uses there
}

// New finds where groups can be made, removes what a previous run with the
// same Name left (it kills their processes), and creates the parent group.
// It prefers cgroup v2 with the memory and pids controllers, then v1 with
// memory and pids hierarchies (cpu and freezer when mounted). It returns
// EINVALID for a bad Name and EUNAVAILABLE, with the reason, when no group
// can be made: not root and nothing delegated, controllers missing, a
// read-only cgroup file system, not Linux.
func New(opts Options) (*Hierarchy, error) {
	sys, err := newHost()
	if err != nil {
		return nil, err
	}
	return open(sys, opts)
}

// open is New on a given host.
func open(sys host, opts Options) (*Hierarchy, error) {
	if err := checkName(opts.Name); err != nil {
		return nil, domain.Errorf(domain.EINVALID, "cgroup: Options.Name: %v", err)
	}
	mountinfo, err := sys.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "no cgroup: %v", err)
	}
	self, err := sys.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "no cgroup: %v", err)
	}
	mounts, own := parseMountinfo(mountinfo), parseProcCgroup(self)
	h := &Hierarchy{host: sys, name: opts.Name}
	if why2 := h.placeV2(mounts, own); why2 != nil {
		*h = Hierarchy{host: sys, name: opts.Name}
		if why1 := h.placeV1(mounts, own); why1 != nil {
			return nil, domain.Errorf(domain.EUNAVAILABLE, "no cgroup: v2: %v; v1: %v", why2, why1)
		}
	}
	if err := h.removeAll(); err != nil {
		return nil, fmt.Errorf("remove the cgroups a previous run left: %w", err)
	}
	if opts.Sweep != "" {
		if opts.SweepAfter <= 0 {
			opts.SweepAfter = DefaultSweepAfter
		}
		h.sweep(opts.Sweep, time.Now().Add(-opts.SweepAfter))
	}
	return h, nil
}

// sweep removes the groups next to the parent whose names start with
// prefix (other than the parent and selfLeaf) as far as they hold no process
// and were made before made.
func (h *Hierarchy) sweep(prefix string, made time.Time) {
	for _, p := range h.parents {
		at := path.Dir(p.dir)
		siblings, _ := h.host.Subdirs(at)
		for _, s := range siblings {
			if strings.HasPrefix(s, prefix) && s != h.name && s != selfLeaf {
				h.rmdirEmpty(path.Join(at, s), made)
			}
		}
	}
}

// rmdirEmpty removes dir and the groups below it, deepest first, as far as
// the kernel lets it (a group with a process in it stays, with its parents)
// and as far as they were made before made (a group of a live platform is
// empty for a moment after Create).
func (h *Hierarchy) rmdirEmpty(dir string, made time.Time) {
	subs, _ := h.host.Subdirs(dir)
	for _, s := range subs {
		h.rmdirEmpty(path.Join(dir, s), made)
	}
	if at, err := h.host.Made(dir); err == nil && at.Before(made) {
		_ = h.host.Rmdir(dir)
	}
}

// ensureParents makes the parent groups again where they are missing (a
// sweep of another platform's removed them while they were empty).
func (h *Hierarchy) ensureParents() error {
	for _, p := range h.parents {
		if err := h.mkdirParent(p.dir); err != nil {
			return err
		}
		if h.version == 2 {
			if err := h.enable(p.dir, p.controllers...); err != nil {
				return fmt.Errorf("enable %s in %s: %w", strings.Join(p.controllers, ", "), p.dir, err)
			}
		}
	}
	return nil
}

// Describe says which cgroup version and controllers are in use and where,
// for logs and /readyz.
func (h *Hierarchy) Describe() string {
	var where []string
	for _, p := range h.parents {
		where = append(where, strings.Join(p.controllers, ", ")+" at "+p.dir)
	}
	s := fmt.Sprintf("cgroup v%d: %s", h.version, strings.Join(where, "; "))
	if h.moved != "" {
		s += " (this process moved to " + h.moved + ")"
	}
	return s
}

// Create makes the group name (path-safe and unique: the caller's) with
// limits l. It returns EINVALID for a bad name or limits and ECONFLICT when
// the group exists.
func (h *Hierarchy) Create(name string, l Limits) (*Group, error) {
	if err := checkName(name); err != nil {
		return nil, domain.Errorf(domain.EINVALID, "create cgroup %q: %v", name, err)
	}
	if err := l.check(); err != nil {
		return nil, domain.Errorf(domain.EINVALID, "create cgroup %s: %v", name, err)
	}
	g := h.group(name)
	for i, dir := range g.dirs {
		err := h.host.Mkdir(dir)
		if errors.Is(err, fs.ErrNotExist) { // the parent was swept while empty
			if err = h.ensureParents(); err == nil {
				err = h.host.Mkdir(dir)
			}
		}
		if err != nil {
			for _, made := range g.dirs[:i] {
				_ = h.host.Rmdir(made)
			}
			if errors.Is(err, fs.ErrExist) {
				return nil, domain.Errorf(domain.ECONFLICT, "create cgroup %s: it exists", name)
			}
			return nil, fmt.Errorf("create cgroup %s: %w", name, err)
		}
	}
	if err := g.limit(l); err != nil {
		_ = g.Remove()
		return nil, fmt.Errorf("create cgroup %s: %w", name, err)
	}
	return g, nil
}

// Close removes every group left (killing their processes) and the parent.
// A v2 leaf New moved this process into stays: this process lives there.
func (h *Hierarchy) Close() error {
	err := h.removeAll()
	for _, p := range h.parents {
		err = errors.Join(err, h.rmdir(p.dir))
	}
	if err != nil {
		return fmt.Errorf("close cgroup %s: %w", h.name, err)
	}
	return nil
}

// removeAll removes every group below the parent.
func (h *Hierarchy) removeAll() error {
	var names []string
	for _, p := range h.parents {
		subs, err := h.host.Subdirs(p.dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, s := range subs {
			if !slices.Contains(names, s) {
				names = append(names, s)
			}
		}
	}
	sort.Strings(names)
	var err error
	for _, name := range names {
		err = errors.Join(err, h.group(name).Remove())
	}
	return err
}

// group is the Group name, made or not.
func (h *Hierarchy) group(name string) *Group {
	g := &Group{h: h, name: name}
	for _, p := range h.parents {
		g.dirs = append(g.dirs, path.Join(p.dir, name))
	}
	return g
}

// rmdir removes the group dir and the groups below it, retrying while the
// kernel still counts exiting processes in them; a missing dir is no error.
func (h *Hierarchy) rmdir(dir string) error {
	subs, err := h.host.Subdirs(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for _, s := range subs {
		if err := h.rmdir(path.Join(dir, s)); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(rmdirTimeout)
	for {
		err := h.host.Rmdir(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// words returns the space-separated words of a file (cgroup.controllers).
func (h *Hierarchy) words(file string) ([]string, error) {
	data, err := h.host.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(data)), nil
}

// pids returns the processes of the group dir (cgroup.procs).
func (h *Hierarchy) pids(dir string) ([]int, error) {
	data, err := h.host.ReadFile(path.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("read %s/cgroup.procs: %q is no pid", dir, f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// checkName says what is wrong with a group name, if anything.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty")
	case name == "." || name == "..", len(name) > 255, strings.ContainsAny(name, "/\x00\n"):
		return fmt.Errorf("%q is not a directory name", name)
	case name == selfLeaf:
		return fmt.Errorf("%q is the platform's own group", name)
	}
	return nil
}
