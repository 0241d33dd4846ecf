package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store/pgtest"
)

// mainArgsEnv makes this test binary the sless binary (TestRunMain): the
// arguments, a JSON list.
const mainArgsEnv = "SLESS_TEST_MAIN_ARGS"

// TestRunMain is no test of its own: run by slessProcess with mainArgsEnv
// set, it is the sless binary, main and its exit status included.
func TestRunMain(t *testing.T) {
	args, ok := os.LookupEnv(mainArgsEnv)
	if !ok {
		t.Skip("the sless binary of TestStopByTheUserIsNoFailure")
	}
	var list []string
	if err := json.Unmarshal([]byte(args), &list); err != nil {
		t.Fatal(err)
	}
	os.Args = append([]string{"sless"}, list...)
	main()
}

// slessProcess is the sless binary running with args in a process group of
// its own, as a shell starts a command, with its stderr kept.
type slessProcess struct {
	cmd    *exec.Cmd
	stderr *testutil.SyncBuffer
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

func startSless(t testing.TB, args ...string) *slessProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunMain$")
	list, _ := json.Marshal(args)
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+string(list))
	p := &slessProcess{cmd: cmd, stderr: &testutil.SyncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	})
	return p
}

// exitCode waits for the process and returns its exit code (-1 when a
// signal ended it).
func (p *slessProcess) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(90 * time.Second):
		t.Fatalf("sless did not exit within 90 s; stderr:\n%s", p.stderr.String())
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// devArgs are the arguments of `sless dev` on a free port and a data dir of
// the test's own, with database.
func devArgs(t testing.TB, database string) (args []string, base string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return []string{"dev", "--data-dir", filepath.Join(t.TempDir(), "data"), "--listen", addr, "--database-url", database}, "http://" + addr
}

// TestStopByTheUserIsNoFailure: `sless dev` stopped by the user, with
// Ctrl-C (SIGINT to its process group, as a terminal sends it) or SIGTERM,
// exits 0 with no error line, whether it was serving or still starting (a
// stop while it waits for its database); a real failure (a database that
// refuses connections) exits 1 with its message.
func TestStopByTheUserIsNoFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sless dev")
	}
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		group bool
	}{
		{"ctrl_c_when_serving", syscall.SIGINT, true},
		{"sigterm_when_serving", syscall.SIGTERM, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args, base := devArgs(t, pgtest.NewDBURL(t))
			p := startSless(t, args...)
			testutil.WaitFor(t, 90*time.Second, func() bool {
				resp, err := http.Get(base + "/readyz")
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == 200
			})
			stop(t, p, tc.sig, tc.group)
			requireQuietExit(t, p)
		})
	}

	t.Run("ctrl_c_while_starting", func(t *testing.T) {
		t.Parallel()
		// A database that takes the connection and never answers: dev waits
		// for it, starting, until the stop.
		db, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		accepted := make(chan net.Conn, 1)
		go func() {
			if c, err := db.Accept(); err == nil {
				accepted <- c
			}
		}()
		args, _ := devArgs(t, fmt.Sprintf("postgres://sless:sless@%s/sless?sslmode=disable", db.Addr()))
		p := startSless(t, args...)
		select {
		case c := <-accepted:
			defer c.Close()
		case <-p.exited:
			t.Fatalf("sless exited before it connected to the database; stderr:\n%s", p.stderr.String())
		case <-time.After(60 * time.Second):
			t.Fatalf("sless did not connect to the database; stderr:\n%s", p.stderr.String())
		}
		stop(t, p, syscall.SIGINT, true)
		requireQuietExit(t, p)
	})

	t.Run("real_failure", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := ln.Addr().String()
		ln.Close()
		args, _ := devArgs(t, "postgres://sless:sless@"+closed+"/sless?sslmode=disable")
		p := startSless(t, args...)
		if code := p.exitCode(t); code != 1 || !strings.Contains(p.stderr.String(), "sless: connect to database: ") {
			t.Fatalf("dev on a database that refuses connections: exit %d, want 1 with the error; stderr:\n%s", code, p.stderr.String())
		}
	})
}

// stop sends sig to sless, or to its process group.
func stop(t *testing.T, p *slessProcess, sig syscall.Signal, group bool) {
	t.Helper()
	pid := p.cmd.Process.Pid
	if group {
		pid = -pid
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
}

// requireQuietExit fails unless sless exits 0 with no line about an error.
func requireQuietExit(t *testing.T, p *slessProcess) {
	t.Helper()
	code := p.exitCode(t)
	var errorLines []string
	for _, line := range strings.Split(p.stderr.String(), "\n") {
		if strings.Contains(strings.ToLower(line), "error") || strings.HasPrefix(line, "sless: ") {
			errorLines = append(errorLines, line)
		}
	}
	if code != 0 || len(errorLines) > 0 {
		t.Fatalf("stopped by the user: exit %d, want 0 with no error; error lines:\n%s\nstderr:\n%s",
			code, strings.Join(errorLines, "\n"), p.stderr.String())
	}
}
