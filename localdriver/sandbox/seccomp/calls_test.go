//go:build linux

package seccomp_test

import (
	"bufio"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/slessio/sless/localdriver/sandbox/seccomp"
)

// bad is an address nothing is mapped at: a call that reads memory there
// fails with EFAULT.
const bad = 1

// nopid is a PID no process has.
const nopid = 0x3fffffff

// deniedCall is a call the filter must refuse, and how to probe it.
type deniedCall struct {
	errno syscall.Errno // the filter's answer
	// args are arguments that the kernel refuses by itself (EINVAL, EFAULT,
	// EBADF, ESRCH, ENOSYS) or that change nothing outside the probe, so
	// that a probe getting through a broken filter, even as root, does no
	// harm and gets another answer than the filter's.
	args [6]uintptr
	// unprivileged: the kernel checks args before privileges, so the
	// answer differs from EPERM even without them.
	unprivileged bool
	perFlag      bool      // refused with each CLONE_NEW* flag in args[0], and only then
	requests     []uintptr // refused with each of these in args[1], and only then
	x86          bool      // the call exists on x86_64 only
}

// mustDeny is the deny list as the package doc states it, kept apart from
// the package's own table so that a call dropped from the filter, or
// answered with another errno, fails the tests.
var mustDeny = map[string]deniedCall{
	"ioctl":             {errno: unix.EPERM, args: [6]uintptr{^uintptr(0)}, unprivileged: true, requests: []uintptr{unix.TIOCSTI, unix.TIOCLINUX}}, // fd -1: EBADF
	"unshare":           {errno: unix.EPERM, perFlag: true},
	"clone":             {errno: unix.EPERM, args: [6]uintptr{unix.CLONE_THREAD}, unprivileged: true, perFlag: true}, // CLONE_THREAD without CLONE_SIGHAND: EINVAL before anything
	"clone3":            {errno: unix.ENOSYS, args: [6]uintptr{0, 0}, unprivileged: true},                            // size 0: EINVAL
	"setns":             {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), 0}, unprivileged: true},                   // fd -1: EBADF
	"mount":             {errno: unix.EPERM, args: [6]uintptr{bad, bad, bad}, unprivileged: true},
	"umount2":           {errno: unix.EPERM, args: [6]uintptr{bad, 0xffff}, unprivileged: true},
	"pivot_root":        {errno: unix.EPERM, args: [6]uintptr{bad, bad}},
	"chroot":            {errno: unix.EPERM, args: [6]uintptr{bad}, unprivileged: true},
	"move_mount":        {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), bad, ^uintptr(0), bad, 0xffffffff}},
	"open_tree":         {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), bad, 0xffffffff}, unprivileged: true},
	"open_tree_attr":    {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), bad, 0xffffffff}, unprivileged: true},
	"fsopen":            {errno: unix.EPERM, args: [6]uintptr{bad, 0xffff}},
	"fsconfig":          {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), 0xffff}, unprivileged: true},
	"fsmount":           {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), 0xffff}},
	"fspick":            {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), bad, 0xffff}},
	"mount_setattr":     {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), bad, 0xffff}, unprivileged: true},
	"keyctl":            {errno: unix.EPERM, args: [6]uintptr{9999}, unprivileged: true}, // no such operation
	"add_key":           {errno: unix.EPERM, args: [6]uintptr{bad, bad}, unprivileged: true},
	"request_key":       {errno: unix.EPERM, args: [6]uintptr{bad, bad}, unprivileged: true},
	"ptrace":            {errno: unix.EPERM, args: [6]uintptr{unix.PTRACE_PEEKDATA, nopid}, unprivileged: true},
	"process_vm_readv":  {errno: unix.EPERM, args: [6]uintptr{nopid, 0, 0, 0, 0, 1}, unprivileged: true}, // flags must be 0
	"process_vm_writev": {errno: unix.EPERM, args: [6]uintptr{nopid, 0, 0, 0, 0, 1}, unprivileged: true},
	"kcmp":              {errno: unix.EPERM, args: [6]uintptr{nopid, nopid}, unprivileged: true},
	"pidfd_getfd":       {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), 0, 1}, unprivileged: true},
	"init_module":       {errno: unix.EPERM, args: [6]uintptr{0, 0, bad}}, // an empty image: ENOEXEC
	"finit_module":      {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), bad, 0xffff}},
	"delete_module":     {errno: unix.EPERM, args: [6]uintptr{bad}},
	"kexec_load":        {errno: unix.EPERM, args: [6]uintptr{0, 0, 0, 0x12340000}}, // an unknown architecture
	"kexec_file_load":   {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), ^uintptr(0), 0, 0, 0xffff}},
	"bpf":               {errno: unix.EPERM, args: [6]uintptr{9999}}, // no such command
	"perf_event_open":   {errno: unix.EPERM, args: [6]uintptr{0, 0, ^uintptr(0), ^uintptr(0), 0xffff}, unprivileged: true},
	"userfaultfd":       {errno: unix.EPERM, args: [6]uintptr{1 | 0x4}}, // UFFD_USER_MODE_ONLY and an unknown flag
	"reboot":            {errno: unix.EPERM, args: [6]uintptr{0, 0, 0}}, // wrong magic: EINVAL
	"swapon":            {errno: unix.EPERM, args: [6]uintptr{bad, 0xffffffff}, unprivileged: true},
	"swapoff":           {errno: unix.EPERM, args: [6]uintptr{bad}},
	"acct":              {errno: unix.EPERM, args: [6]uintptr{bad}},
	"syslog":            {errno: unix.EPERM, args: [6]uintptr{10}},                                  // SYSLOG_ACTION_SIZE_BUFFER: reads a number
	"quotactl":          {errno: unix.EPERM, args: [6]uintptr{0x80000100 | 99}, unprivileged: true}, // Q_SYNC of quota type 99
	"quotactl_fd":       {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), 0x80000100}, unprivileged: true},
	"lookup_dcookie":    {errno: unix.EPERM, args: [6]uintptr{0, bad, 0}},
	"open_by_handle_at": {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), bad, 0}},
	"name_to_handle_at": {errno: unix.EPERM, args: [6]uintptr{^uintptr(0), bad, bad, bad, 0xffff0000}, unprivileged: true},
	"iopl":              {errno: unix.EPERM, args: [6]uintptr{5}, unprivileged: true, x86: true},             // levels are 0-3
	"ioperm":            {errno: unix.EPERM, args: [6]uintptr{1 << 16, 1, 1}, unprivileged: true, x86: true}, // past the last port
	"uselib":            {errno: unix.EPERM, args: [6]uintptr{bad}, unprivileged: true, x86: true},
	"vhangup":           {errno: unix.EPERM},                                                                              // the probe has no terminal (bwrap --new-session)
	"fanotify_init":     {errno: unix.EPERM, args: [6]uintptr{unix.FAN_CLASS_NOTIF | unix.FAN_REPORT_FID, unix.O_RDONLY}}, // a watcher of nothing
	"settimeofday":      {errno: unix.EPERM, args: [6]uintptr{bad, 0}, unprivileged: true},
	"clock_settime":     {errno: unix.EPERM, args: [6]uintptr{unix.CLOCK_REALTIME, bad}, unprivileged: true},
	"clock_adjtime":     {errno: unix.EPERM, args: [6]uintptr{unix.CLOCK_REALTIME, bad}, unprivileged: true},
	"io_uring_setup":    {errno: unix.ENOSYS, args: [6]uintptr{0, bad}, unprivileged: true},
	"io_uring_enter":    {errno: unix.ENOSYS, args: [6]uintptr{^uintptr(0)}, unprivileged: true},
	"io_uring_register": {errno: unix.ENOSYS, args: [6]uintptr{^uintptr(0)}, unprivileged: true},
}

// cloneNewFlags names the CLONE_NEW* flags.
var cloneNewFlags = map[uintptr]string{
	unix.CLONE_NEWUSER: "CLONE_NEWUSER", unix.CLONE_NEWNS: "CLONE_NEWNS", unix.CLONE_NEWNET: "CLONE_NEWNET",
	unix.CLONE_NEWPID: "CLONE_NEWPID", unix.CLONE_NEWIPC: "CLONE_NEWIPC", unix.CLONE_NEWUTS: "CLONE_NEWUTS",
	unix.CLONE_NEWCGROUP: "CLONE_NEWCGROUP", unix.CLONE_NEWTIME: "CLONE_NEWTIME",
}

// ioctlNames names the ioctl requests of mustDeny.
var ioctlNames = map[uintptr]string{unix.TIOCSTI: "TIOCSTI", unix.TIOCLINUX: "TIOCLINUX"}

// timex is adjtimex's argument: Modes 0 reads the clock's state. It is a
// global so that nothing frees it while the kernel writes to it.
var timex unix.Timex

// callProbe is one system call the probe process makes.
type callProbe struct {
	name         string
	nr           uintptr
	args         [6]uintptr
	want         syscall.Errno // under the filter; 0: it succeeds
	denied       bool          // want is the filter's answer, not the kernel's
	unprivileged bool          // see deniedCall
}

// callProbes are the probes: each call of mustDeny that this architecture
// has (clone and unshare with each CLONE_NEW* flag, ioctl with each
// request), and calls the filter must let through. A call the filter does
// not refuse at all is left out (TestDenyList reports it).
func callProbes() []callProbe {
	nrs := map[string]uint32{}
	for _, r := range seccomp.Denied() {
		nrs[r.Name] = r.Nr
	}
	var probes []callProbe
	for _, name := range slices.Sorted(maps.Keys(mustDeny)) {
		d := mustDeny[name]
		nr, ok := nrs[name]
		if !ok {
			continue
		}
		p := callProbe{name: name, nr: uintptr(nr), args: d.args, want: d.errno, denied: true, unprivileged: d.unprivileged}
		switch {
		case d.perFlag:
			for _, flag := range slices.Sorted(maps.Keys(cloneNewFlags)) {
				pf := p
				pf.name += "/" + cloneNewFlags[flag]
				pf.args[0] |= flag
				probes = append(probes, pf)
			}
		case len(d.requests) > 0:
			for _, req := range d.requests {
				pr := p
				pr.name += "/" + ioctlNames[req]
				pr.args[1] = req
				probes = append(probes, pr)
			}
		default:
			probes = append(probes, p)
		}
	}
	return append(probes,
		callProbe{name: "unshare/none", nr: unix.SYS_UNSHARE},
		callProbe{name: "unshare/CLONE_FILES", nr: unix.SYS_UNSHARE, args: [6]uintptr{unix.CLONE_FILES}},
		callProbe{name: "clone/CLONE_THREAD", nr: unix.SYS_CLONE, args: [6]uintptr{unix.CLONE_THREAD}, want: unix.EINVAL},
		callProbe{name: "ioctl/TCGETS", nr: unix.SYS_IOCTL, args: [6]uintptr{^uintptr(0), unix.TCGETS}, want: unix.EBADF},
		callProbe{name: "adjtimex/read", nr: unix.SYS_ADJTIMEX, args: [6]uintptr{uintptr(unsafe.Pointer(&timex))}},
	)
}

// TestDenyList checks Denied against mustDeny: the same calls (those of
// x86_64 only on x86_64), the same errnos, clone and unshare refused for
// every CLONE_NEW* flag and ioctl for TIOCSTI and TIOCLINUX.
func TestDenyList(t *testing.T) {
	t.Parallel()
	denied := map[string]seccomp.Rule{}
	for _, r := range seccomp.Denied() {
		denied[r.Name] = r
		if _, ok := mustDeny[r.Name]; !ok {
			t.Errorf("%s is denied but not in mustDeny: add it there (with harmless arguments) and to the package doc", r.Name)
		}
	}
	for name, d := range mustDeny {
		r, ok := denied[name]
		switch {
		case d.x86 && runtime.GOARCH != "amd64":
			if ok {
				t.Errorf("%s is denied on %s, which has no such call", name, runtime.GOARCH)
			}
		case !ok:
			t.Errorf("%s is not denied", name)
		case r.Errno != d.errno:
			t.Errorf("%s gets %s, want %s", name, result(r.Errno), result(d.errno))
		case d.perFlag:
			for flag, flagName := range cloneNewFlags {
				if uintptr(r.Flags)&flag == 0 {
					t.Errorf("%s with %s is not denied", name, flagName)
				}
			}
		case len(d.requests) > 0:
			for _, req := range d.requests {
				if !slices.Contains(r.Requests, uint32(req)) {
					t.Errorf("%s with request %#x is not denied", name, req)
				}
			}
		case r.Flags != 0 || len(r.Requests) > 0:
			t.Errorf("%s is denied only with some arguments (%#x, %#x), want always", name, r.Flags, r.Requests)
		}
	}
}

// runCalls makes every probe's call and prints its name and result.
func runCalls() {
	runtime.LockOSThread()
	for _, p := range callProbes() {
		_, _, e := unix.RawSyscall6(p.nr, p.args[0], p.args[1], p.args[2], p.args[3], p.args[4], p.args[5])
		fmt.Printf("%s %s\n", p.name, result(e))
	}
}

// result says "ok" for success and the errno's symbol otherwise.
func result(e syscall.Errno) string {
	switch name := unix.ErrnoName(e); {
	case e == 0:
		return "ok"
	case name != "":
		return strings.ToUpper(name)
	default:
		return "errno" + strconv.Itoa(int(e))
	}
}

// callResults runs the probes in a sandbox and returns each one's result.
func callResults(t *testing.T, s sandbox, probes []callProbe) map[string]string {
	t.Helper()
	s.env = append(s.env, probeEnv+"=calls")
	out, code := s.run(t, selfInSandbox)
	if code != 0 {
		t.Fatalf("the probe exited with %d:\n%s", code, out)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if name, res, ok := strings.Cut(sc.Text(), " "); ok {
			got[name] = res
		}
	}
	for _, p := range probes {
		if _, ok := got[p.name]; !ok {
			t.Fatalf("no result for %s:\n%s", p.name, out)
		}
	}
	return got
}

func TestDeniedCallsFail(t *testing.T) {
	t.Parallel()
	bwrapPath(t)
	filter, probes := mustFilter(t), callProbes()
	for _, as := range runners(t) {
		t.Run(as.name, func(t *testing.T) {
			t.Parallel()
			got := callResults(t, sandbox{as: as, filter: filter}, probes)
			for _, p := range probes {
				if want := result(p.want); got[p.name] != want {
					t.Errorf("%s: got %s, want %s", p.name, got[p.name], want)
				}
			}
		})
	}
}

// TestProbesTellWithoutTheFilter is the control of TestDeniedCallsFail: with
// no filter, each probe gets another answer than the filter would give, so
// that test fails when the filter lets a call through. As root every call
// reaches the kernel's own checks; without privileges the kernel refuses
// some with EPERM by itself, and only the others are checked.
func TestProbesTellWithoutTheFilter(t *testing.T) {
	t.Parallel()
	bwrapPath(t)
	probes := callProbes()
	for _, as := range runners(t) {
		t.Run(as.name, func(t *testing.T) {
			t.Parallel()
			got := callResults(t, sandbox{as: as}, probes)
			checked := 0
			for _, p := range probes {
				if !p.denied || !(as.privileged || p.unprivileged) {
					continue
				}
				checked++
				switch {
				case got[p.name] != result(p.want):
				case p.want == unix.ENOSYS:
					t.Logf("%s: ENOSYS without the filter too: this kernel does not have it", p.name)
				default:
					t.Errorf("%s: %s without the filter too: the probe cannot tell whether the filter refused it", p.name, got[p.name])
				}
			}
			t.Logf("%d probes checked", checked)
		})
	}
}
