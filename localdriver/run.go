package localdriver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/runtimes"
)

// MaxOutput is how much of a job's stdout and of its stderr Run keeps: the
// last MaxOutput bytes of each, after a note of what was dropped.
const MaxOutput = 1 << 20

// jobGrace is how long after timeout_sec the driver waits before killing a
// job: the wrapper times out by itself first and says so on stderr.
const jobGrace = 2 * time.Second

// job is a running Run, so that Remove and Close can end it.
type job struct {
	key  fnKey
	stop chan error    // receives why the job must end; buffered
	done chan struct{} // closed when its process is gone
}

// kill asks the job to end and waits until its process is gone.
func (j *job) kill(reason error) {
	select {
	case j.stop <- reason:
	default:
	}
	<-j.done
}

// errRemoved ends the jobs of a function that is being removed.
var errRemoved = domain.Errorf(domain.ECONFLICT, "the function was removed")

// Run runs a version once in job mode (SLESS_MODE=job, SLESS_EVENT,
// SLESS_TIMEOUT_SEC and the function's variables) and returns its exit code
// and the last MaxOutput bytes of its stdout and stderr; the result is
// stdout's last line. A non-zero exit is a result. When timeout_sec passes
// the wrapper exits 124 by itself; if the process is still there jobGrace
// later, its process group is killed and the result is ExitCode 124 with
// TimedOut set. A run of a function that Remove deletes meanwhile ends with
// its process group killed (exit 137). Its secrets are opened for each run
// (see "Secrets" in the package doc). Errors: EINVALID (names, image),
// EUNAVAILABLE (ctx ended, shutdown, interpreter missing), openSecrets'
// (EUNPROCESSABLE: a deleted secret version, secret_files without a
// sandbox), and those of runnableDir: a version built by another control
// plane is built here first.
func (d *Driver) Run(ctx context.Context, r driver.RunSpec) (driver.RunResult, error) {
	k, dir, err := d.runnableDir(ctx, r.Workload)
	if err != nil {
		return driver.RunResult{}, err
	}
	rt, err := runtimes.Lookup(string(r.Config.Runtime))
	if err != nil {
		return driver.RunResult{}, err
	}
	spec, err := rt.Command(dir, runtimes.ModeJob)
	if err != nil {
		return driver.RunResult{}, err
	}
	event := string(r.Event)
	if event == "" || event == "null" {
		event = "{}"
	}
	timeout := timeoutSec(r.Config)
	secrets, err := d.openSecrets(ctx, r.Workload)
	if err != nil {
		return driver.RunResult{}, err
	}
	env := processEnv(r.Workload, secrets.Env, runtimes.EnvEvent+"="+event, runtimes.EnvTimeoutSec+"="+strconv.Itoa(timeout))

	j := &job{key: k, stop: make(chan error, 1), done: make(chan struct{})}
	if err := d.addJob(j); err != nil {
		return driver.RunResult{}, err
	}
	defer d.removeJob(j)
	defer close(j.done)

	stdout, stderr := newTailBuffer(MaxOutput), newTailBuffer(MaxOutput)
	cmd, err := d.processCommand(k, spec, dir, env, secrets.Files, memoryMB(r.Config), nil)
	if err != nil {
		return driver.RunResult{}, err
	}
	p, err := startProc(cmd, stdout, stderr)
	if err != nil {
		return driver.RunResult{}, err
	}
	deadline := time.NewTimer(time.Duration(timeout)*time.Second + jobGrace)
	defer deadline.Stop()
	var timedOut bool
	select {
	case <-p.done:
	case <-deadline.C:
		timedOut = true
		p.kill()
		fmt.Fprintf(stderr, "\nsless: killed after %d seconds (timeout_sec)\n", timeout)
	case reason := <-j.stop:
		p.kill()
		if reason == errClosed {
			return driver.RunResult{}, reason
		}
		fmt.Fprintf(stderr, "\nsless: killed: %s\n", domain.ErrorMessage(reason))
	case <-ctx.Done():
		p.kill()
		return driver.RunResult{}, domain.Errorf(domain.EUNAVAILABLE, "run %s v%d: %v", k, r.Version, ctx.Err())
	}
	if p.oomKilled {
		fmt.Fprintf(stderr, "\nsless: killed: out of memory (%d MiB, all its processes together)\n", memoryMB(r.Config))
	}
	res := driver.RunResult{ExitCode: p.state.code, Stdout: stdout.String(), Stderr: stderr.String()}
	if timedOut || res.ExitCode == 124 {
		res.ExitCode, res.TimedOut = 124, true
	}
	return res, nil
}

func (d *Driver) addJob(j *job) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errClosed
	}
	d.jobs[j] = struct{}{}
	return nil
}

func (d *Driver) removeJob(j *job) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.jobs, j)
}
