//go:build unix

package localdriver

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/localdriver/sandbox"
)

// drainDelay bounds how long output is read after a process group ended:
// a process that left the group (setsid) may hold the pipes open.
const drainDelay = 2 * time.Second

// proc is one started function process, leader of its own process group so
// that stopping it also stops whatever it started.
type proc struct {
	cmd     *exec.Cmd
	pid     int
	started time.Time
	done    chan struct{} // closed once the group is gone and its output read; state is then set
	state   *exitState
	// oomKilled: the kernel killed a process of its sandbox at the memory
	// limit of the whole sandbox (set with state).
	oomKilled bool
}

// exitState is how a process ended.
type exitState struct {
	code int    // exit code, 128+signal when killed by a signal
	desc string // "exit status 1", "signal: killed"
}

// startProc starts a prepared (sandboxed) command with stdout and stderr
// going to the writers, in a new process group that dies with the driver
// (Linux). When the process exits, the rest of its group is killed, and in a
// sandbox the end of its PID namespace kills everything else it started: a
// function leaves nothing running.
func startProc(cmd *sandbox.Cmd, stdout, stderr io.Writer) (*proc, error) {
	cmd.SysProcAttr = procAttr()
	// Own pipes rather than exec's copying: Wait then returns when the
	// process exits, not when the last child holding its output does.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("create stderr pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		if domain.ErrorCode(err) == domain.EUNAVAILABLE {
			return nil, err
		}
		return nil, domain.Errorf(domain.EUNAVAILABLE, "start %s: %v", filepath.Base(cmd.Path), err)
	}
	p := &proc{cmd: cmd.Cmd, pid: cmd.Process.Pid, started: time.Now(), done: make(chan struct{})}
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); _, _ = io.Copy(stdout, outR) }()
	go func() { defer copies.Done(); _, _ = io.Copy(stderr, errR) }()
	go func() {
		err := cmd.Wait()
		_ = syscall.Kill(-p.pid, syscall.SIGKILL) // what the process left running in its group
		copied := make(chan struct{})
		go func() { copies.Wait(); close(copied) }()
		select {
		case <-copied:
		case <-time.After(drainDelay):
			outR.Close() // ends the copies
			errR.Close()
			<-copied
		}
		outR.Close()
		errR.Close()
		p.state = describeExit(cmd.Cmd, err)
		p.oomKilled = cmd.OOMKilled()
		close(p.done)
	}()
	return p, nil
}

func describeExit(cmd *exec.Cmd, err error) *exitState {
	st := &exitState{code: -1}
	ps := cmd.ProcessState
	if ps == nil {
		st.desc = fmt.Sprint(err)
		return st
	}
	st.desc = ps.String()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.code = 128 + int(ws.Signal())
	} else {
		st.code = ps.ExitCode()
	}
	return st
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process group; a group that is gone is fine.
// Once done is closed the group id may belong to another process group, so
// nothing is sent.
func (p *proc) signal(sig syscall.Signal) {
	if !p.exited() {
		_ = syscall.Kill(-p.pid, sig)
	}
}

// terminate stops the process group: SIGTERM, then SIGKILL after grace or
// as soon as hurry is closed. It returns when the leader has been reaped, and
// kills what the leader left behind in its group.
func (p *proc) terminate(grace time.Duration, hurry <-chan struct{}) {
	if !p.exited() {
		p.signal(syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case <-p.done:
		case <-t.C:
		case <-hurry:
		}
		t.Stop()
	}
	p.kill()
}

// kill sends SIGKILL to the process group and waits until it is gone.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}
