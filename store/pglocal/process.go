package pglocal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// process is one run of the postmaster.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the postmaster has exited
	err  error         // its exit status; written before done is closed
}

func (p *process) signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

// killGroup kills the postmaster's process group: the postmaster, and the
// children a killed postmaster leaves behind, which hold its shared memory and
// keep a new postmaster from starting until they notice and exit.
func (p *process) killGroup() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }

// abort stops a postmaster immediately (crash-safe) and waits for it.
func (p *process) abort() {
	p.signal(syscall.SIGQUIT)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	p.killGroup()
	<-p.done
}

// launch starts postgres on c.port and waits until it accepts connections. A
// postmaster that is not ready when ctx ends is aborted. After Stop it starts
// nothing.
func (c *Cluster) launch(ctx context.Context) (*process, error) {
	logPath := filepath.Join(c.dataDir, logFile)
	if fi, err := os.Stat(logPath); err == nil && fi.Size() > maxLogSize {
		_ = os.Remove(logPath)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open server log: %w", err)
	}
	defer logf.Close() // the child keeps its own descriptor
	logStart, _ := logf.Seek(0, 2)

	args := []string{"-D", c.dataDir, "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1",
		// No Unix socket, so no socket directory for the server's user to
		// reach (or to be too long for sun_path), and no way in for other users.
		"-c", "unix_socket_directories=",
	}
	for _, k := range slices.Sorted(maps.Keys(c.settings)) {
		args = append(args, "-c", k+"="+c.settings[k])
	}
	// The server must outlive the start-up context, so it is not tied to ctx.
	cmd := c.acct.command(context.WithoutCancel(ctx), c.bins.path("postgres"), args...)
	setParentDeathSignal(cmd)
	cmd.Stdout, cmd.Stderr = logf, logf
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return nil, errStopped
	}
	if err := cmd.Start(); err != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	c.proc = p
	c.mu.Unlock()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()

	failed := func(cause error) error {
		logText := readFrom(logPath, logStart)
		if strings.Contains(logText, "could not bind") || strings.Contains(logText, "Address already in use") {
			cause = fmt.Errorf("%w: %v", errBind, cause)
		}
		return fmt.Errorf("postgres on 127.0.0.1:%d in %s: %w\n%s", c.port, c.dataDir, cause, tail(logText, 20))
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := c.ping(ctx)
		if err == nil {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, failed(fmt.Errorf("exited during start-up: %v", p.err))
		case <-ctx.Done():
			p.abort()
			return nil, failed(fmt.Errorf("not ready: %w (last attempt: %v)", ctx.Err(), err))
		case <-tick.C:
		}
	}
}

var errStopped = errors.New("cluster stopped")

func (c *Cluster) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

func (c *Cluster) current() *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc
}

// Stop shuts the server down with PostgreSQL's "fast" mode (clients are
// disconnected, work is checkpointed), ends supervision and waits for both. If
// ctx ends first, the server is stopped immediately (crash-safe, recovered on
// next start). Stopping a cluster that is over already returns nil.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	c.stopping = true
	p := c.proc
	c.mu.Unlock()
	c.cancel() // ends a restart in progress
	select {
	case <-c.done:
		return nil
	default:
	}
	p.signal(syscall.SIGINT)
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
	}
	p = c.current()
	p.signal(syscall.SIGQUIT)
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		p.killGroup()
		<-c.done
	}
	return fmt.Errorf("stop postgres in %s: %w", c.dataDir, ctx.Err())
}

// stopStale stops a server left running on dir by an earlier process that died
// without stopping it; otherwise the new server would refuse the data directory.
func stopStale(ctx context.Context, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return nil // no lock file: nothing running
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 0 || !isPostgres(pid) {
		return nil // stale or foreign; postgres itself decides
	}
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		return nil
	}
	for syscall.Kill(pid, 0) == nil {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop the earlier server (pid %d) on %s: %w", pid, dir, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// isPostgres reports whether pid is a live postgres process, so a recycled pid
// in a stale lock file never gets a signal from us.
func isPostgres(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return strings.Contains(string(cmdline), "postgres")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func readFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return ""
	}
	b := make([]byte, 64<<10)
	n, _ := f.Read(b)
	return string(b[:n])
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
