package cgroup

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a helper process of the mode it names
// (see helper) instead of running the tests.
const helperEnv = "SLESS_CGROUP_TEST_HELPER"

// blockedEnv tells a helper to wait for the pipe on fd 3 to close.
const blockedEnv = "SLESS_CGROUP_TEST_BLOCKED"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		helper(mode)
		return
	}
	os.Exit(m.Run())
}

// helper is a process the tests start in a group. Started by startBlocked,
// it first waits until the test has added it and closes the pipe on fd 3.
func helper(mode string) {
	if os.Getenv(blockedEnv) != "" {
		block := os.NewFile(3, "block")
		_, _ = block.Read(make([]byte, 1))
		block.Close()
	}
	switch mode {
	case "alloc": // touch 30 MiB, hold it for 2 s
		b := make([]byte, 30<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		time.Sleep(2 * time.Second)
		runtime.KeepAlive(b)
	case "sleep":
		time.Sleep(time.Minute)
	case "tree": // a child, and a daemonised grandchild in its own session
		child := helperCmd("sleep")
		daemonize := helperCmd("daemonize")
		if child.Start() != nil || daemonize.Run() != nil {
			os.Exit(2)
		}
		fmt.Println("started")
		time.Sleep(time.Minute)
	case "daemonize":
		grandchild := helperCmd("sleep")
		grandchild.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if grandchild.Start() != nil {
			os.Exit(2)
		}
	default:
		os.Exit(2)
	}
}

// helperCmd returns the command of a helper process of mode.
func helperCmd(mode string) *exec.Cmd {
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, helperEnv+"=") && !strings.HasPrefix(kv, blockedEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, helperEnv+"="+mode)
	return cmd
}

// uniqueName returns a Name no other test, here or in another process, uses.
func uniqueName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "sless-test-" + hex.EncodeToString(b)
}

// newHierarchy returns a Hierarchy of a fresh Name, closed at the end of
// the test, which then checks that no directory is left.
func newHierarchy(t *testing.T) *Hierarchy {
	t.Helper()
	h, err := New(Options{Name: uniqueName()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Logf("%s", h.Describe())
	t.Cleanup(func() { mustClose(t, h) })
	return h
}

// mustClose closes h and checks that it left no directory.
func mustClose(t *testing.T, h *Hierarchy) {
	t.Helper()
	if err := h.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for _, p := range h.parents {
		if _, err := os.Stat(p.dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left after Close (%v)", p.dir, err)
		}
	}
}

// mustCreate creates a group of a fresh name.
func mustCreate(t *testing.T, h *Hierarchy, l Limits) *Group {
	t.Helper()
	g, err := h.Create(strings.ReplaceAll(t.Name(), "/", "-"), l)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return g
}

// startBlocked starts cmd blocked on a pipe, adds it to g by its pid, and
// lets it go: how the sandbox adds its processes. The process is killed at
// the end of the test if still there.
func startBlocked(t *testing.T, g *Group, cmd *exec.Cmd) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cmd.ExtraFiles = []*os.File{r}
	cmd.Env = append(cmd.Environ(), blockedEnv+"=1")
	err = cmd.Start()
	r.Close()
	if err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatalf("Add: %v", err)
	}
}

// wait waits for cmd to exit, failing the test after timeout.
func wait(t *testing.T, cmd *exec.Cmd, timeout time.Duration) *os.ProcessState {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		return cmd.ProcessState
	case <-time.After(timeout):
		t.Fatalf("%s still runs after %s", cmd.Args, timeout)
		return nil
	}
}

// killedBy returns the signal that ended a process, 0 if it exited.
func killedBy(ps *os.ProcessState) syscall.Signal {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

// python returns the real python3 interpreter (python3 on PATH may be a
// slow pyenv shim).
var python = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	return strings.TrimSpace(string(out)), err
})

// stat returns the fields of /proc/pid/stat after the command (state,
// ppid, pgrp, session, ...), nil when the process is gone.
func stat(pid int) []string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	_, after, _ := strings.Cut(string(data), ") ")
	return strings.Fields(after)
}
