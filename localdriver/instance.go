package localdriver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/localdriver/sandbox"
	"github.com/slessio/sless/runtimes"
	"github.com/slessio/sless/workers"
)

// healthPath is what a function process answers 200 on once its code is loaded.
const healthPath = "/_sless/health"

// stderrTail is how much stderr an instance keeps for failure messages.
const stderrTail = 64 << 10

// failureLines is how many stderr lines a failure message quotes.
const failureLines = 20

// instance is one version of a function running as a supervised server
// process on a fixed loopback port: restarted on the same port when it
// crashes, until it crash-loops or is stopped.
type instance struct {
	d        *Driver
	key      fnKey
	version  int
	image    string
	port     int
	endpoint string
	command  func() (*sandbox.Cmd, error) // prepares one process of the instance
	log      *slog.Logger
	stderr   *tailBuffer // across restarts

	stopOnce  sync.Once
	stopCh    chan struct{} // closed to stop supervising
	hurryOnce sync.Once
	hurry     chan struct{} // closed to skip the SIGTERM grace period
	done      chan struct{} // closed when the process is gone for good

	mu      sync.Mutex
	failure string // why it crash-looped; "" while healthy or stopped
}

// errPortTaken means another process took the port between choosing and binding it.
var errPortTaken = errors.New("port taken")

// startInstance starts the server process of a version and waits until it
// is healthy. A version that exits or never gets healthy is EUNPROCESSABLE
// with its stderr; ctx ending first is EUNAVAILABLE.
func (d *Driver) startInstance(ctx context.Context, k fnKey, w workers.Workload, dir string) (*instance, error) {
	rt, err := runtimes.Lookup(string(w.Config.Runtime))
	if err != nil {
		return nil, err
	}
	spec, err := rt.Command(dir, runtimes.ModeServer)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		in := &instance{
			d: d, key: k, version: w.Version, image: w.Image, port: port,
			endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
			log:      d.opts.Logger.With("function", k.String(), "version", w.Version, "port", port),
			stderr:   newTailBuffer(stderrTail),
			stopCh:   make(chan struct{}), hurry: make(chan struct{}), done: make(chan struct{}),
		}
		env := processEnv(w, runtimes.EnvPort+"="+strconv.Itoa(port))
		in.command = func() (*sandbox.Cmd, error) { return d.processCommand(k, spec, dir, env, memoryMB(w.Config)) }
		err = in.start(ctx)
		if errors.Is(err, errPortTaken) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, err
		}
		return in, nil
	}
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, domain.Errorf(domain.EUNAVAILABLE, "find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// spawn starts one process of the instance.
func (in *instance) spawn() (*proc, error) {
	cmd, err := in.command()
	if err != nil {
		return nil, err
	}
	return startProc(cmd,
		&lineLogger{log: in.log, stream: "stdout"},
		&lineLogger{log: in.log, stream: "stderr", tail: in.stderr})
}

// start runs the first process and, once it is healthy, supervises it.
func (in *instance) start(ctx context.Context) error {
	began := time.Now()
	p, err := in.spawn()
	if err != nil {
		close(in.done)
		return err
	}
	err = waitHealthy(ctx, in.d.closing, in.endpoint, p, in.d.opts.StartTimeout)
	if err != nil {
		p.terminate(in.d.opts.StopGrace, nil)
		close(in.done)
		tail := lastLines(in.stderr.String(), failureLines, 4<<10)
		switch {
		case errors.Is(err, errClosed):
			return errClosed
		case ctx.Err() != nil:
			return domain.Errorf(domain.EUNAVAILABLE, "start %s v%d: %v", in.key, in.version, ctx.Err())
		case p.state != nil && errors.Is(err, errExited) && portTaken(tail):
			return errPortTaken
		case errors.Is(err, errExited):
			return domain.Errorf(domain.EUNPROCESSABLE, "version %d of %s failed to start: the process exited (%s) before it was healthy:\n%s",
				in.version, in.key, p.state.desc, tail)
		default:
			return domain.Errorf(domain.EUNPROCESSABLE, "version %d of %s failed to start: %v:\n%s", in.version, in.key, err, tail)
		}
	}
	in.log.Info("localdriver: function started", "startup", time.Since(began).Round(time.Millisecond))
	go in.supervise(p)
	return nil
}

// portTaken reports whether a wrapper's stderr says its port was in use.
func portTaken(stderr string) bool {
	return strings.Contains(stderr, "already in use") || strings.Contains(stderr, "EADDRINUSE")
}

var errExited = errors.New("exited")

// healthClient checks /_sless/health; no keep-alive, so that it leaves no
// connection open to a process that is about to be replaced.
var healthClient = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
}

// waitHealthy polls the health path until it answers 200. It returns
// errExited when the process ends first, an error after timeout, ctx's
// error, or errClosed when closing is closed.
func waitHealthy(ctx context.Context, closing <-chan struct{}, endpoint string, p *proc, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	// Short polls first: Go answers within milliseconds, Python and Node.js
	// within ~100 ms; a connect to a closed loopback port costs microseconds.
	interval := 2 * time.Millisecond
	for {
		if healthy(ctx, endpoint) {
			return nil
		}
		t := time.NewTimer(interval)
		select {
		case <-p.done:
			t.Stop()
			return errExited
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-closing:
			t.Stop()
			return errClosed
		case <-deadline.C:
			t.Stop()
			return fmt.Errorf("no answer 200 on %s within %s", healthPath, timeout)
		case <-t.C:
		}
		interval = min(interval*3/2, 20*time.Millisecond)
	}
}

func healthy(ctx context.Context, endpoint string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+healthPath, nil)
	if err != nil {
		return false
	}
	resp, err := healthClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// supervise waits for the process to exit and restarts it with exponential
// backoff, until it is stopped or crashes CrashLoopRestarts times within
// CrashLoopWindow: then it records the failure and calls OnFailure.
func (in *instance) supervise(p *proc) {
	defer close(in.done)
	o := in.d.opts
	backoff := o.RestartBackoff
	var crashes []time.Time
	for {
		var exited <-chan struct{} = closedChan
		if p != nil {
			exited = p.done
		}
		select {
		case <-in.stopCh:
			if p != nil {
				p.terminate(o.StopGrace, in.hurry)
			}
			return
		case <-exited:
		}
		now := time.Now()
		desc := "could not be started"
		if p != nil {
			desc = p.state.desc
			if now.Sub(p.started) > o.CrashLoopWindow {
				backoff = o.RestartBackoff // it ran long enough to count as recovered
			}
		}
		crashes = append(crashes, now)
		for len(crashes) > 0 && now.Sub(crashes[0]) > o.CrashLoopWindow {
			crashes = crashes[1:]
		}
		if len(crashes) >= o.CrashLoopRestarts {
			in.crashLoop(len(crashes), desc)
			return
		}
		in.log.Warn("localdriver: function process exited; restarting", "exit", desc, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-in.stopCh:
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, o.MaxRestartBackoff)
		var err error
		if p, err = in.spawn(); err != nil {
			in.log.Error("localdriver: restart failed", "error", err)
			p = nil
		}
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// crashLoop records a crash loop and reports it.
func (in *instance) crashLoop(crashes int, lastExit string) {
	o := in.d.opts
	msg := fmt.Sprintf("version %d of %s is crash-looping: its process exited %d times within %s (last: %s); last lines of stderr:\n%s",
		in.version, in.key, crashes, o.CrashLoopWindow, lastExit, lastLines(in.stderr.String(), failureLines, 4<<10))
	in.mu.Lock()
	in.failure = msg
	in.mu.Unlock()
	in.log.Error("localdriver: function is crash-looping; not restarting it", "exit", lastExit)
	if o.OnFailure != nil {
		o.OnFailure(in.key.ns, in.key.fn)
	}
}

// failed returns the crash-loop message, "" if it did not crash-loop.
func (in *instance) failed() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.failure
}

// stop stops supervising and the process (SIGTERM, SIGKILL after the grace
// period or as soon as ctx ends) and returns once it is gone.
func (in *instance) stop(ctx context.Context) {
	in.stopOnce.Do(func() { close(in.stopCh) })
	select {
	case <-in.done:
		return
	case <-ctx.Done():
	}
	in.hurryOnce.Do(func() { close(in.hurry) })
	<-in.done
}
