package localdriver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/localdriver/sandbox"
	"github.com/slessio/sless/runtimes"
)

// healthPath is what a function process answers 200 on once its code is loaded.
const healthPath = "/_sless/health"

// stderrTail is how much stderr an instance keeps for failure messages.
const stderrTail = 64 << 10

// failureLines is how many stderr lines a failure message quotes.
const failureLines = 20

// instance is one version of a function running as a supervised server
// process that serves HTTP on a Unix socket of the driver's (its endpoint is
// "unix:" and the socket's path): restarted with a fresh socket at the same
// path when it crashes, until it crash-loops or is stopped.
type instance struct {
	d        *Driver
	key      fnKey
	workload driver.Workload
	version  int
	image    string
	socket   string // the socket's path
	endpoint string
	health   *http.Client // dials socket
	// command prepares one process of the instance, serving on ln, with
	// the secrets opened for it.
	command  func(ln *os.File, secrets driver.SecretValues) (*sandbox.Cmd, error)
	log      *slog.Logger
	stderr   *tailBuffer // across restarts
	memoryMB int

	stopOnce  sync.Once
	stopCh    chan struct{} // closed to stop supervising
	hurryOnce sync.Once
	hurry     chan struct{} // closed to skip the SIGTERM grace period
	done      chan struct{} // closed when the process is gone for good

	mu      sync.Mutex
	failure string // why it crash-looped; "" while healthy or stopped
	cur     *proc  // the process serving now, or the last one
}

// startInstance starts the server process of a version and waits until it
// is healthy. A version that exits or never gets healthy is EUNPROCESSABLE
// with its stderr, one whose secrets cannot be opened is openSecrets'
// error; ctx ending first is EUNAVAILABLE.
func (d *Driver) startInstance(ctx context.Context, k fnKey, w driver.Workload, dir string) (*instance, error) {
	rt, err := runtimes.Lookup(string(w.Config.Runtime))
	if err != nil {
		return nil, err
	}
	spec, err := rt.Command(dir, runtimes.ModeServer)
	if err != nil {
		return nil, err
	}
	secrets, err := d.openSecrets(ctx, w)
	if err != nil {
		return nil, err
	}
	platform := []string{runtimes.EnvListenFD + "=" + strconv.Itoa(listenFD),
		runtimes.EnvConcurrency + "=" + strconv.Itoa(w.Config.ConcurrencyOf())}
	env := processEnv(w, secrets.Env, platform...)
	// A process of the warm pool, if one serves this function, is already
	// sandboxed, started and listening on a socket of its own. It takes
	// secret variables with the rest of its environment (on its control
	// socket), but its file system was made before its function was known,
	// and files cannot be mounted into a sandbox once it runs: a version
	// with secret_files starts a process of its own.
	var pp *pooled
	if len(secrets.Files) == 0 {
		pp = d.pool.take(rt.Description(), dir, functionEnv(spec, env))
	}
	var socket string
	if pp != nil {
		socket = pp.socket
	} else if socket, err = d.sockets.path(); err != nil {
		return nil, err
	}
	in := &instance{
		d: d, key: k, workload: w, version: w.Version, image: w.Image, socket: socket,
		endpoint: endpointScheme + socket,
		health:   unixClient(socket),
		log:      d.opts.Logger.With("function", k.String(), "version", w.Version),
		stderr:   newTailBuffer(stderrTail),
		memoryMB: memoryMB(w.Config),
		stopCh:   make(chan struct{}), hurry: make(chan struct{}), done: make(chan struct{}),
	}
	in.command = func(ln *os.File, secrets driver.SecretValues) (*sandbox.Cmd, error) {
		return d.processCommand(k, spec, dir, processEnv(w, secrets.Env, platform...), secrets.Files, in.memoryMB, ln)
	}
	var first *proc
	if pp != nil {
		if first, err = d.pool.specialize(in, pp, dir, spec, env); err != nil {
			in.log.Warn("localdriver: a process of the warm pool could not take the function; starting one", "error", err)
		}
	}
	if err := in.start(ctx, first, secrets); err != nil {
		return nil, err
	}
	return in, nil
}

// spawn starts one process of the instance with secrets, on a fresh
// listening socket at the instance's path, which only the process holds
// once it started: when it exits, connections are refused (and the proxy
// wakes the function).
func (in *instance) spawn(secrets driver.SecretValues) (*proc, error) {
	ln, err := in.d.sockets.listen(in.socket)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	cmd, err := in.command(ln, secrets)
	if err != nil {
		return nil, err
	}
	p, err := startProc(cmd,
		&lineLogger{log: in.log, stream: "stdout"},
		&lineLogger{log: in.log, stream: "stderr", tail: in.stderr})
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	in.cur = p
	in.mu.Unlock()
	return p, nil
}

// exitReason waits, until ctx ends, for the instance's current process to
// end and says how ("out of memory (128 MiB)", "signal: killed"); "" when
// it is still running then.
func (in *instance) exitReason(ctx context.Context) string {
	in.mu.Lock()
	p := in.cur
	in.mu.Unlock()
	if p == nil {
		return ""
	}
	select {
	case <-p.done:
		return in.exitDesc(p)
	case <-ctx.Done():
		return ""
	}
}

// start runs the first process with secrets, unless it is given one
// (pooled, started already), and, once it is healthy, supervises it.
func (in *instance) start(ctx context.Context, pooled *proc, secrets driver.SecretValues) error {
	began := time.Now()
	p, err := pooled, error(nil)
	if p != nil {
		in.mu.Lock()
		in.cur = p
		in.mu.Unlock()
	} else if p, err = in.spawn(secrets); err != nil {
		close(in.done)
		return err
	}
	err = waitHealthy(ctx, in.d.closing, in.health, p, in.d.opts.StartTimeout)
	if err != nil {
		p.terminate(in.d.opts.StopGrace, nil)
		close(in.done)
		in.d.sockets.remove(in.socket)
		tail := lastLines(in.stderr.String(), failureLines, 4<<10)
		switch {
		case errors.Is(err, errClosed):
			return errClosed
		case ctx.Err() != nil:
			return domain.Errorf(domain.EUNAVAILABLE, "start %s v%d: %v", in.key, in.version, ctx.Err())
		case errors.Is(err, errExited):
			return domain.Errorf(domain.EUNPROCESSABLE, "version %d of %s failed to start: the process exited (%s) before it was healthy:\n%s",
				in.version, in.key, in.exitDesc(p), tail)
		default:
			return domain.Errorf(domain.EUNPROCESSABLE, "version %d of %s failed to start: %v:\n%s", in.version, in.key, err, tail)
		}
	}
	in.d.register(in)
	in.log.Info("localdriver: function started", "startup", time.Since(began).Round(time.Millisecond), "pooled", pooled != nil)
	go in.supervise(p)
	return nil
}

var errExited = errors.New("exited")

// waitHealthy polls the health path through client until it answers 200. It
// returns errExited when the process ends first, an error after timeout,
// ctx's error, or errClosed when closing is closed.
func waitHealthy(ctx context.Context, closing <-chan struct{}, client *http.Client, p *proc, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	// Short polls first: Go answers within milliseconds, Python and Node.js
	// within ~100 ms; a connect to a socket nobody accepts on costs microseconds.
	interval := 2 * time.Millisecond
	for {
		if healthy(ctx, client) {
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

func healthy(ctx context.Context, client *http.Client) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://function"+healthPath, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// exitDesc says how the process ended: "out of memory (128 MiB)" when the
// kernel killed it at the instance's memory limit.
func (in *instance) exitDesc(p *proc) string {
	if p.oomKilled {
		return fmt.Sprintf("out of memory (%d MiB)", in.memoryMB)
	}
	return p.state.desc
}

// supervise waits for the process to exit and restarts it with exponential
// backoff, until it is stopped or crashes CrashLoopRestarts times within
// CrashLoopWindow: then it records the failure and reports it (Reports.Crashed).
func (in *instance) supervise(p *proc) {
	defer close(in.done)
	o := in.d.opts
	backoff := o.RestartBackoff
	var crashes []time.Time
	var startErr error // why the last restart failed
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
		if domain.ErrorCode(startErr) == domain.EUNPROCESSABLE { // the version's own fault: a deleted secret
			desc += ": " + domain.ErrorMessage(startErr)
		}
		if p != nil {
			desc = in.exitDesc(p)
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
		if p, startErr = in.restart(); startErr != nil {
			in.log.Error("localdriver: restart failed", "error", startErr)
			p = nil
		}
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// restart spawns a process of the instance after its last one exited, with
// its secrets opened anew: a secret version deleted meanwhile stops it.
func (in *instance) restart() (*proc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), in.d.opts.StartTimeout)
	defer cancel()
	secrets, err := in.d.openSecrets(ctx, in.workload)
	if err != nil {
		return nil, err
	}
	return in.spawn(secrets)
}

// crashLoop records a crash loop and reports it.
func (in *instance) crashLoop(crashes int, lastExit string) {
	o := in.d.opts
	msg := fmt.Sprintf("version %d of %s is crash-looping: its process exited %d times within %s (last: %s); last lines of stderr:\n%s",
		in.version, in.key, crashes, o.CrashLoopWindow, lastExit, lastLines(in.stderr.String(), failureLines, 4<<10))
	in.mu.Lock()
	in.failure = msg
	in.mu.Unlock()
	in.log.Error("localdriver: function is crash-looping; not restarting it", "exit", lastExit)
	in.d.crashed(in.key.ns, in.key.fn)
}

// failed returns the crash-loop message, "" if it did not crash-loop.
func (in *instance) failed() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.failure
}

// stop stops supervising and the process (SIGTERM, SIGKILL after the grace
// period or as soon as ctx ends) and returns once it is gone; its socket
// is removed.
func (in *instance) stop(ctx context.Context) {
	in.stopOnce.Do(func() { close(in.stopCh) })
	select {
	case <-in.done:
	case <-ctx.Done():
		in.hurryOnce.Do(func() { close(in.hurry) })
		<-in.done
	}
	in.d.unregister(in)
	in.d.sockets.remove(in.socket)
}
