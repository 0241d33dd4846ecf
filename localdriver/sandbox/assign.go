package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/slessio/sless/domain"
)

// unassignedSeq makes the names of the identity folders of Unassigned
// sandboxes unique within a process.
var unassignedSeq atomic.Uint64

// capName is how setpriv(1) names a capability: letters and underscores.
var capName = regexp.MustCompile(`^[a-z_]+$`)

// unassigned prepares an Unassigned spec: as root it runs as uid 0 (with
// Spec.Caps only, see command), otherwise as the platform's uid, as every
// sandbox of a normal user does.
func (s *Sandbox) unassigned(spec Spec) (*Cmd, error) {
	if spec.Tenant != "" {
		return nil, domain.Errorf(domain.EINVALID, "sandbox: an unassigned sandbox has no tenant yet, not %q", spec.Tenant)
	}
	for _, c := range spec.Caps {
		if !capName.MatchString(c) {
			return nil, domain.Errorf(domain.EINVALID, "sandbox: %q is not a capability's name", c)
		}
	}
	uid := os.Getuid()
	if s.root {
		uid = 0
	}
	return s.command(spec, uid)
}

// identity returns the folder of the passwd and group files the sandbox of
// spec sees: those of uid, or, for an Unassigned one as root, a folder of
// its own naming no tenant yet, which Assign completes.
func (s *Sandbox) identity(spec Spec, uid int) (string, error) {
	if !s.root || !spec.Unassigned {
		return s.uids.identity(uid)
	}
	dir := filepath.Join(s.opts.Dir, "unassigned", fmt.Sprintf("%d-%d", os.Getpid(), unassignedSeq.Add(1)))
	if err := writeIdentity(dir, -1); err != nil {
		return "", err
	}
	return dir, nil
}

// sweepUnassigned removes the identity folders of Unassigned sandboxes that
// processes which are gone left in dir/unassigned (their names start with
// the pid; a folder reused by a later process of the same pid is rewritten
// whole).
func sweepUnassigned(dir string) {
	entries, _ := os.ReadDir(filepath.Join(dir, "unassigned"))
	for _, e := range entries {
		pidText, _, _ := strings.Cut(e.Name(), "-")
		if pid, err := strconv.Atoi(pidText); err == nil && syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.RemoveAll(filepath.Join(dir, "unassigned", e.Name()))
		}
	}
}

// capList is setpriv's "+cap" list of caps, after a leading comma; "" for none.
func capList(caps []string) string {
	var b strings.Builder
	for _, c := range caps {
		b.WriteString(",+" + c)
	}
	return b.String()
}

// Assign gives a started Unassigned sandbox its tenant, before its program
// runs anything of the tenant's: its passwd and group then name the
// tenant's uid, the memory limit of all its processes becomes memoryBytes
// (its cgroup) and RLIMIT_DATA of each dataBytes (0 leaves either as it
// is). It returns the uid and gid the program must switch to, the tenant's
// when the platform runs as root, or -1 and -1 when it runs as the tenant's
// already (a normal user's sandboxes, ModeNone). Errors: EINVALID (not an
// Unassigned sandbox, not started, assigned before), EUNAVAILABLE (the
// tenant's uid, the limits).
func (c *Cmd) Assign(tenant string, memoryBytes, dataBytes uint64) (uid, gid int, err error) {
	if !c.spec.Unassigned || c.Process == nil || !c.assigned.CompareAndSwap(false, true) {
		return 0, 0, domain.Errorf(domain.EINVALID, "sandbox: Assign needs a started unassigned sandbox, once")
	}
	if c.bwrapArgs == nil { // ModeNone: a plain process
		if err := setLimits(c.Process.Pid, dataBytes, 0); err != nil {
			return 0, 0, domain.Errorf(domain.EUNAVAILABLE, "sandbox: set the limits of the process: %v", err)
		}
		return -1, -1, nil
	}
	uid, gid = -1, -1
	if c.s.root {
		if uid, err = c.s.uids.get(tenant); err != nil {
			return 0, 0, err
		}
		gid = uid
		if err := writeIdentity(c.users, uid); err != nil {
			return 0, 0, err
		}
	}
	if c.cg != nil && memoryBytes > 0 {
		if err := c.cg.SetMemory(int64(memoryBytes)); err != nil {
			return 0, 0, domain.Errorf(domain.EUNAVAILABLE, "sandbox: %v", err)
		}
	}
	if dataBytes > 0 {
		for _, pid := range descendants(c.init) {
			if err := setLimits(pid, dataBytes, 0); err != nil {
				return 0, 0, domain.Errorf(domain.EUNAVAILABLE, "sandbox: set the limits of process %d: %v", pid, err)
			}
		}
	}
	return uid, gid, nil
}

// descendants returns pid and the processes below it (Linux's
// /proc/PID/task/TID/children, which CONFIG_PROC_CHILDREN provides).
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", out[i]))
		for _, t := range tasks {
			data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", out[i], t.Name()))
			for _, f := range strings.Fields(string(data)) {
				if child, err := strconv.Atoi(f); err == nil {
					out = append(out, child)
				}
			}
		}
	}
	return out
}
