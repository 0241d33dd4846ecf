package testcluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is one child process of the cluster with its output in a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process exited
	err  error         // Wait's result, set before done closes
}

// startProc starts path with args, its output going to dir/name.log.
func startProc(name, dir, path string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited returns an error naming the process and its last log lines if it
// has stopped, nil while it runs.
func (p *proc) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%v):\n%s", p.name, p.err, p.tail(30))
	default:
		return nil
	}
}

// stop asks the process to end, then kills it after grace.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	data, _ := os.ReadFile(p.log)
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitFor polls check until it returns nil, a process of procs exits, or ctx ends.
func waitFor(ctx context.Context, what string, check func(context.Context) error, procs ...*proc) error {
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		for _, p := range procs {
			if err := p.exited(); err != nil {
				return fmt.Errorf("waiting for %s: %w", what, err)
			}
		}
		select {
		case <-ctx.Done():
			var logs []string
			for _, p := range procs {
				logs = append(logs, p.name+":\n"+p.tail(20))
			}
			return fmt.Errorf("waiting for %s: %w (last: %v)\n%s", what, ctx.Err(), last, strings.Join(logs, "\n"))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
