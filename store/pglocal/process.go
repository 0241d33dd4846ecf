package pglocal

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// start launches postgres on c.port and waits until it accepts connections.
func (c *Cluster) start(ctx context.Context, bins binaries, acct account, settings map[string]string) error {
	logPath := filepath.Join(c.dir, logFile)
	if fi, err := os.Stat(logPath); err == nil && fi.Size() > maxLogSize {
		_ = os.Remove(logPath)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open server log: %w", err)
	}
	defer logf.Close() // the child keeps its own descriptor
	logStart, _ := logf.Seek(0, 2)

	args := []string{"-D", c.dir, "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=", // no socket: avoids path-length limits and other users
	}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "-c", k+"="+settings[k])
	}
	// The server must outlive the start-up context, so it is not tied to ctx.
	cmd := acct.command(context.WithoutCancel(ctx), bins.path("postgres"), args...)
	setParentDeathSignal(cmd)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.cmd = cmd
	c.done = make(chan struct{})
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()

	failed := func(cause error) error {
		logText := readFrom(logPath, logStart)
		if strings.Contains(logText, "could not bind") || strings.Contains(logText, "Address already in use") {
			cause = fmt.Errorf("%w: %v", errBind, cause)
		}
		return fmt.Errorf("postgres on 127.0.0.1:%d in %s: %w\n%s", c.port, c.dir, cause, tail(logText, 20))
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := c.ping(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-c.done:
			return failed(fmt.Errorf("exited during start-up: %v", c.waitErr))
		case <-ctx.Done():
			stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = c.Stop(stopCtx)
			cancel()
			return failed(fmt.Errorf("not ready: %w (last attempt: %v)", ctx.Err(), err))
		case <-tick.C:
		}
	}
}

func (c *Cluster) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// Stop shuts the server down with PostgreSQL's "fast" mode (clients are
// disconnected, work is checkpointed) and waits for it to exit. If ctx ends
// first, the server is stopped immediately (crash-safe, recovered on next start).
func (c *Cluster) Stop(ctx context.Context) error {
	select {
	case <-c.done:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
	}
	_ = c.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
	return fmt.Errorf("stop postgres in %s: %w", c.dir, ctx.Err())
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
