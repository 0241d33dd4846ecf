package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/localdriver/sandbox/cgroup"
	"github.com/slessio/sless/localdriver/sandbox/egress"
)

// startTimeout bounds how long bwrap may take to report its sandbox.
const startTimeout = 30 * time.Second

// Cmd is a prepared sandboxed process: an exec.Cmd whose Stdout, Stderr,
// Stdin and SysProcAttr the caller may set before Start, and which is
// waited for with Cmd.Wait. Do not set ExtraFiles (Spec.ExtraFiles), Path
// or Args.
type Cmd struct {
	*exec.Cmd
	s         *Sandbox
	spec      Spec
	data      uint64        // RLIMIT_DATA; 0 none
	nproc     uint64        // RLIMIT_NPROC; 0 none (ModeNone)
	group     cgroup.Limits // of the sandbox's cgroup
	bwrapArgs []string      // nil in ModeNone
	fds       bwrapFD
	secrets   [][]byte // the contents of Spec.SecretFiles, in the order of their descriptors

	link     *egress.Link
	cg       *cgroup.Group
	release  sync.Once
	oomKills atomic.Uint64

	init     int         // host pid of the sandbox's first process, once started
	users    string      // an Unassigned sandbox's own identity folder (root); removed by Wait
	assigned atomic.Bool // Assign ran
}

// cgroupSeq makes the names of cgroups unique within a process.
var cgroupSeq atomic.Uint64

// Start starts the process. A sandbox is started blocked; its first process
// is given its limits, its cgroup and its network (the egress rules, then
// the link), and only then runs its program, so nothing of the program runs
// unlimited or unfiltered. When Start fails after bwrap started, it kills
// and reaps it; the error is then EUNAVAILABLE (the sandbox could not be
// made), and exec's error otherwise.
func (c *Cmd) Start() error {
	keepOwnDescriptors()
	if c.bwrapArgs == nil {
		if err := c.Cmd.Start(); err != nil {
			return err
		}
		if c.data > 0 {
			// Right after exec: allocations from here on are checked, and
			// the few made before count towards the limit.
			_ = setLimits(c.Process.Pid, c.data, 0)
		}
		return nil
	}
	var opened []*os.File
	closeAll := func() {
		for _, f := range opened {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			opened = append(opened, r, w)
		}
		return r, w, err
	}
	argsR, argsW, err1 := pipe()
	infoR, infoW, err2 := pipe()
	blockR, blockW, err3 := pipe()
	filterR, filterW, err4 := pipe()
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			closeAll()
			return fmt.Errorf("sandbox: pipe: %w", err)
		}
	}
	defer closeAll()
	// The filter fits a pipe's buffer: written whole before bwrap reads it.
	if _, err := filterW.Write(c.s.filter); err != nil {
		return fmt.Errorf("sandbox: write the seccomp filter: %w", err)
	}
	filterW.Close()
	// The secrets' contents go through pipes too, never a file or an
	// argument; bwrap closes each once read.
	secretRs, err := feedSecrets(c.secrets)
	if err != nil {
		return fmt.Errorf("sandbox: pipe: %w", err)
	}
	opened = append(opened, secretRs...)
	c.ExtraFiles = append(append(append([]*os.File{}, c.spec.ExtraFiles...), argsR, infoW, blockR, filterR), secretRs...)
	// NUL-terminated, as --args reads them; the arguments are not on
	// bwrap's command line, so /proc/1/cmdline in the sandbox names no host
	// path. They may not fit the pipe: written as bwrap reads them, by a
	// goroutine that owns the pipe's end (closeAll must not close it under it).
	opened = slices.DeleteFunc(opened, func(f *os.File) bool { return f == argsW })
	go func() {
		_, _ = argsW.WriteString(strings.Join(c.bwrapArgs, "\x00") + "\x00")
		argsW.Close()
	}()
	err = c.Cmd.Start()
	for _, f := range append([]*os.File{argsR, infoW, blockR, filterR}, secretRs...) {
		f.Close()
	}
	if err != nil {
		return err
	}
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	fail := func(err error) error {
		// The sandbox's first process too: it holds the output pipes, and
		// waiting for them would wait for it.
		if info.ChildPID > 0 {
			_ = syscall.Kill(info.ChildPID, syscall.SIGKILL)
		}
		_ = c.Process.Kill()
		c.Cmd.WaitDelay = time.Second
		_ = c.Wait()
		return domain.Errorf(domain.EUNAVAILABLE, "sandbox: %v", err)
	}
	_ = infoR.SetReadDeadline(time.Now().Add(startTimeout))
	if err := json.NewDecoder(infoR).Decode(&info); err != nil || info.ChildPID <= 0 {
		return fail(fmt.Errorf("%w (%v)", errNoInfo, err))
	}
	c.init = info.ChildPID
	if err := setLimits(info.ChildPID, c.data, c.nproc); err != nil {
		return fail(fmt.Errorf("set the limits of the sandbox: %w", err))
	}
	if c.s.groups != nil {
		tenant := c.spec.Tenant
		if c.spec.Unassigned {
			tenant = "unassigned"
		}
		name := fmt.Sprintf("%s-%d-%d", tenant, os.Getpid(), cgroupSeq.Add(1))
		if c.cg, err = c.s.groups.Create(name, c.group); err != nil {
			return fail(err)
		}
		if err := c.cg.Add(info.ChildPID); err != nil {
			return fail(err)
		}
	}
	if c.link, err = c.s.net.Attach(info.ChildPID, c.spec.Network); err != nil {
		return fail(err)
	}
	if _, err := blockW.Write([]byte{1}); err != nil {
		return fail(fmt.Errorf("start the sandbox's program: %w", err))
	}
	return nil
}

// Wait waits for the process to exit, then ends its network link and
// removes its cgroup (killing whatever of it is left).
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	c.release.Do(func() {
		c.link.Close()
		if c.cg != nil {
			if n, err := c.cg.OOMKills(); err == nil {
				c.oomKills.Store(n)
			}
			_ = c.cg.Remove()
		}
		if c.users != "" {
			_ = os.RemoveAll(c.users)
		}
	})
	return err
}

// OOMKilled reports, after Wait, whether the kernel killed a process of the
// sandbox because all of them together reached Spec.MemoryBytes.
func (c *Cmd) OOMKilled() bool { return c.oomKills.Load() > 0 }
