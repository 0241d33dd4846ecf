package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/slessio/sless/domain"
)

// startTimeout bounds how long bwrap may take to report its sandbox.
const startTimeout = 30 * time.Second

// Cmd is a prepared sandboxed process: an exec.Cmd whose Stdout, Stderr,
// Stdin and SysProcAttr the caller may set before Start, and which is
// waited for like any other. Do not set ExtraFiles, Path or Args.
type Cmd struct {
	*exec.Cmd
	memory    uint64   // RLIMIT_DATA; 0 none
	nproc     uint64   // RLIMIT_NPROC; 0 none (ModeNone)
	bwrapArgs []string // nil in ModeNone
}

// Start starts the process. A sandbox is started blocked, gets its limits,
// and only then runs its program, so nothing of the program runs unlimited.
// When Start fails after bwrap started, it kills and reaps it; the error is
// then EUNAVAILABLE (the sandbox could not be made), and exec's error otherwise.
func (c *Cmd) Start() error {
	if c.bwrapArgs == nil {
		if err := c.Cmd.Start(); err != nil {
			return err
		}
		if c.memory > 0 {
			// Right after exec: allocations from here on are checked, and
			// the few made before count towards the limit.
			_ = setLimits(c.Process.Pid, c.memory, 0)
		}
		return nil
	}
	argsR, argsW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("sandbox: pipe: %w", err)
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		argsR.Close()
		argsW.Close()
		return fmt.Errorf("sandbox: pipe: %w", err)
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		argsR.Close()
		argsW.Close()
		infoR.Close()
		infoW.Close()
		return fmt.Errorf("sandbox: pipe: %w", err)
	}
	defer infoR.Close()
	// Closing blockW lets the sandbox go (or fail) whatever happens below.
	defer blockW.Close()
	c.ExtraFiles = []*os.File{argsR, infoW, blockR} // fdArgs, fdInfo, fdBlock
	go func() {
		// NUL-terminated, as --args reads them; the arguments are not on
		// bwrap's command line, so /proc/1/cmdline in the sandbox names no host path.
		_, _ = argsW.WriteString(strings.Join(c.bwrapArgs, "\x00") + "\x00")
		argsW.Close()
	}()
	err = c.Cmd.Start()
	argsR.Close()
	infoW.Close()
	blockR.Close()
	if err != nil {
		return err
	}
	fail := func(err error) error {
		_ = c.Process.Kill()
		_ = c.Wait()
		return domain.Errorf(domain.EUNAVAILABLE, "sandbox: %v", err)
	}
	_ = infoR.SetReadDeadline(time.Now().Add(startTimeout))
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(infoR).Decode(&info); err != nil || info.ChildPID <= 0 {
		return fail(fmt.Errorf("%w (%v)", errNoInfo, err))
	}
	if err := setLimits(info.ChildPID, c.memory, c.nproc); err != nil {
		return fail(fmt.Errorf("set the limits of the sandbox: %w", err))
	}
	if _, err := blockW.Write([]byte{1}); err != nil {
		return fail(fmt.Errorf("start the sandbox's program: %w", err))
	}
	return nil
}
