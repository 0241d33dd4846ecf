package faults

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/internal/testutil"
)

// plane is one control plane: a `sless serve` process with its own data dir
// and port, on the world's PostgreSQL and S3.
type plane struct {
	t       *testing.T
	w       *world
	name    string
	dataDir string
	listen  string
	env     []string
	log     *testutil.SyncBuffer

	cmd    *exec.Cmd
	exited chan struct{}
}

// newPlane prepares a control plane called name; extra environment entries
// (KEY=value) come after the suite's own. Start it with start.
func (w *world) newPlane(name string, extra ...string) *plane {
	w.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	p := &plane{t: w.t, w: w, name: name, dataDir: filepath.Join(w.base, "data-"+name), listen: listen, log: &testutil.SyncBuffer{}}
	p.env = append(os.Environ(),
		"DATABASE_URL="+w.dbURL, "S3_ENDPOINT="+w.s3Addr, "S3_ACCESS_KEY="+s3Access, "S3_SECRET_KEY="+s3Secret,
		"S3_BUCKET="+s3Bucket, "SLESS_JWT_SECRET="+jwtSecret, "SLESS_LISTEN="+listen, "SLESS_DATA_DIR="+p.dataDir,
		// The load of the scenarios is far above a tenant's API rate.
		"SLESS_RATE_LIMIT=100000", "SLESS_RATE_BURST=100000")
	p.env = append(p.env, extra...)
	w.t.Cleanup(func() {
		p.killGroup()
		if w.t.Failed() {
			w.t.Logf("sless serve %s (%s) output:\n%s", name, listen, tail(p.log.String(), 150))
		}
	})
	return p
}

// base is the plane's URL.
func (p *plane) base() string { return "http://" + p.listen }

// start runs `sless serve` and waits until /readyz answers 200.
func (p *plane) start() {
	p.t.Helper()
	p.startNoWait()
	p.waitReady(90 * time.Second)
}

// startNoWait runs `sless serve` without waiting for it.
func (p *plane) startNoWait() {
	p.t.Helper()
	p.cmd = exec.Command(slessBinary(p.t), "serve")
	p.cmd.Env = p.env
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(p.cmd, p.exited)
}

// waitReady waits until /readyz answers 200 and returns how long it took.
func (p *plane) waitReady(limit time.Duration) time.Duration {
	p.t.Helper()
	start := time.Now()
	c := &http.Client{Timeout: 5 * time.Second}
	testutil.WaitFor(p.t, limit, func() bool {
		select {
		case <-p.exited:
			p.t.Fatalf("sless serve %s exited:\n%s", p.name, tail(p.log.String(), 80))
		default:
		}
		resp, err := c.Get(p.base() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return time.Since(start)
}

// pid is the server's process id.
func (p *plane) pid() int { return p.cmd.Process.Pid }

// kill9 kills the server with SIGKILL, as a crash would: only the server
// process (its function processes die with it, as the sandbox promises).
func (p *plane) kill9() {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// term sends SIGTERM and waits for the server to exit; it returns how long
// the stop took.
func (p *plane) term() time.Duration {
	p.t.Helper()
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(90 * time.Second):
		p.t.Errorf("sless serve %s did not stop within 90 s of SIGTERM", p.name)
		p.kill9()
	}
	return time.Since(start)
}

// killGroup kills whatever is left of the server's process group.
func (p *plane) killGroup() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
}

// riverClientOf is the LIKE pattern of the River client ID of the process
// pid (sless_<host>_<pid>_<random>).
func riverClientOf(pid int) string { return "%\\_" + strconv.Itoa(pid) + "\\_%" }

func tail(s string, lines int) string {
	all := strings.Split(s, "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
