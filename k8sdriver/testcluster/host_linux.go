package testcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slessio/sless/internal/mountinfo"
)

// This file undoes what a node changes on the machine: its processes, mounts,
// cgroups, bridge and the kernel settings kubelet sets. A node records what
// it made in its folder (nodeState); Stop undoes it, and the next start
// undoes what a run that never stopped left behind (sweepStale).

// kubeletSysctls are the kernel settings kubelet sets on start
// (protectKernelDefaults off): restored when the last node of the machine stops.
var kubeletSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"}

// hostRecord is where the nodes of a machine keep what they share: a lock
// and the kernel settings from before the first of them started (in dir),
// read from and written back to procSys.
type hostRecord struct {
	dir, procSys string
	// leftDirs are folders containerd, CNI and kubelet make at fixed
	// places; removed, when empty, as the last node stops.
	leftDirs []string
}

// machine is this machine's record.
var machine = hostRecord{dir: "/run/sless-testcluster", procSys: "/proc/sys",
	leftDirs: []string{"/run/containerd/s", "/run/containerd/runc", "/run/containerd", "/var/lib/cni/results", "/var/lib/cni", "/var/log/containers"}}

// nodeState is what a node made on the machine, written to its folder as
// node.json before it makes it.
type nodeState struct {
	PID    int    `json:"pid"` // the test process that owns the node
	Dir    string `json:"dir"`
	Bridge string `json:"bridge"`
	Cgroup string `json:"cgroup"` // the kubelet's cgroup root, e.g. /sless-tc-0a1b2c
	// Firewall says the node ran kube-router, whose rules go with it.
	Firewall bool `json:"firewall,omitempty"`
}

// user is the node's entry among the users of the kernel settings: its
// process and its bridge (a process may run several nodes).
func (s nodeState) user() string { return strconv.Itoa(s.PID) + "/" + s.Bridge }

func (s nodeState) write() error {
	data, _ := json.Marshal(s)
	return os.WriteFile(filepath.Join(s.Dir, "node.json"), data, 0o600)
}

// undo removes everything of the node: it kills the processes that run from
// its folder or in its cgroups (kubelet, containerd, the shims and the
// containers), unmounts what is mounted below its folder, removes its
// cgroups and its bridge. It goes on after an error and returns them all.
func (s nodeState) undo() error {
	var errs []error
	for range 3 {
		killUnder(s.Dir, s.Cgroup)
		time.Sleep(100 * time.Millisecond)
	}
	if s.Firewall {
		errs = append(errs, cleanupFirewall())
	}
	errs = append(errs, unmountUnder(s.Dir))
	if s.Cgroup != "" {
		errs = append(errs, removeCgroups(s.Cgroup))
	}
	if s.Bridge != "" {
		if _, err := os.Stat("/sys/class/net/" + s.Bridge); err == nil {
			if out, err := exec.Command("ip", "link", "delete", s.Bridge).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("delete bridge %s: %v: %s", s.Bridge, err, out))
			}
		}
	}
	removeLinksInto("/var/log/containers", s.Dir)
	errs = append(errs, machine.release(s.user()))
	return errors.Join(errs...)
}

// sweepStale undoes the nodes of earlier runs whose test process is gone,
// and removes their folders.
func sweepStale() error {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "sless-testcluster-*", "node.json"))
	var errs []error
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var s nodeState
		if json.Unmarshal(data, &s) != nil || s.Dir != filepath.Dir(m) || alive(s.PID) {
			continue
		}
		if err := s.undo(); err != nil {
			errs = append(errs, fmt.Errorf("node of an earlier run in %s: %w", s.Dir, err))
			continue
		}
		_ = os.RemoveAll(s.Dir)
	}
	return errors.Join(errs...)
}

func alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// killUnder kills every process whose command line names dir (containerd,
// kubelet, the shims: all are given paths below it) or that runs in the
// node's cgroups.
func killUnder(dir, cgroup string) {
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), dir+"/") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if cgroup == "" {
		return
	}
	for _, root := range cgroupHierarchies() {
		_ = filepath.WalkDir(filepath.Join(root, cgroup), func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			procs, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			for _, f := range strings.Fields(string(procs)) {
				if pid, err := strconv.Atoi(f); err == nil && pid != self {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
	}
}

// unmountUnder detaches every mount below dir, deepest first (container
// root filesystems, secret and emptyDir volumes, network namespaces).
func unmountUnder(dir string) error {
	mounts, err := mountinfo.Read()
	if err != nil {
		return err
	}
	var points []string
	for _, m := range mounts {
		if strings.HasPrefix(m.Point, dir+"/") {
			points = append(points, m.Point)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// cgroupHierarchies returns the mount points of the machine's cgroup
// hierarchies (cgroup v1 controllers, and the v2 tree).
func cgroupHierarchies() []string {
	mounts, _ := mountinfo.Read()
	var roots []string
	for _, m := range mounts {
		if (m.FSType == "cgroup" || m.FSType == "cgroup2") && !slices.Contains(roots, m.Point) {
			roots = append(roots, m.Point)
		}
	}
	return roots
}

// makeCgroup creates the kubelet's cgroup root in every hierarchy; a new
// cpuset takes its parent's CPUs and memory nodes, or no task could join it.
func makeCgroup(cgroup string) error {
	for _, root := range cgroupHierarchies() {
		p := filepath.Join(root, cgroup)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(root, f)); err == nil {
				if err := os.WriteFile(filepath.Join(p, f), v, 0o644); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(p, f), err)
				}
			}
		}
	}
	return nil
}

// removeCgroups removes the cgroup root and everything below it, deepest
// first, once their tasks are gone.
func removeCgroups(cgroup string) error {
	var errs []error
	for _, root := range cgroupHierarchies() {
		top := filepath.Join(root, cgroup)
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			var err error
			for range 50 { // a killed task leaves its cgroup a moment later
				if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeLinksInto removes the links of dir that point below target
// (kubelet's /var/log/containers links to its pods' logs).
func removeLinksInto(dir, target string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if to, err := os.Readlink(p); err == nil && strings.HasPrefix(to, target+"/") {
			_ = os.Remove(p)
		}
	}
}

// sysctlRecord is sysctl.json in a hostRecord's dir: the kernel settings
// from before the first node started, and the nodes that still run.
type sysctlRecord struct {
	Saved map[string]string `json:"saved"`
	Users []string          `json:"users"` // nodeState.user of the running nodes
}

// hold records the kernel settings kubelet changes, unless a running node
// already did, and adds user (nodeState.user) to their users.
func (h hostRecord) hold(user string) error {
	return h.withLock(func(r *sysctlRecord) error {
		if len(r.Users) == 0 {
			r.Saved = map[string]string{}
			for _, k := range kubeletSysctls {
				v, err := os.ReadFile(filepath.Join(h.procSys, k))
				if err != nil {
					return err
				}
				r.Saved[k] = strings.TrimSpace(string(v))
			}
		}
		if !slices.Contains(r.Users, user) {
			r.Users = append(r.Users, user)
		}
		return nil
	})
}

// release removes user (and the users whose process is gone) from the
// users; when none is left it writes the recorded settings back and removes
// the empty leftDirs.
func (h hostRecord) release(user string) error {
	return h.withLock(func(r *sysctlRecord) error {
		r.Users = slices.DeleteFunc(r.Users, func(u string) bool {
			pid, _, _ := strings.Cut(u, "/")
			n, _ := strconv.Atoi(pid)
			return u == user || !alive(n)
		})
		if len(r.Users) > 0 || r.Saved == nil {
			return nil
		}
		var errs []error
		for k, v := range r.Saved {
			if err := os.WriteFile(filepath.Join(h.procSys, k), []byte(v), 0o644); err != nil {
				errs = append(errs, err)
			}
		}
		r.Saved = nil
		for _, d := range h.leftDirs {
			_ = syscall.Rmdir(d) // fails unless empty
		}
		return errors.Join(errs...)
	})
}

// withLock runs change on the record under an exclusive lock and writes it
// back.
func (h hostRecord) withLock(change func(*sysctlRecord) error) error {
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(h.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file unlocks too
	path := filepath.Join(h.dir, "sysctl.json")
	var r sysctlRecord
	if data, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(data, &r)
	}
	if err := change(&r); err != nil {
		return err
	}
	data, _ := json.Marshal(r)
	return os.WriteFile(path, data, 0o600)
}
