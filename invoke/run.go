package invoke

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/store"
)

// A run is the other way a function is called: as a one-shot process with
// an event (a job's run, a cron slot), through the driver's Run, which
// starts a process for it, so there is no instance to wake. Runner is that
// path, as the proxy is the request path: it runs, reads the outcome and
// records the invocation; the job and cron workers decide on the outcome
// (events, retries by RetryAgain).

// Statuses of run attempts that did not finish, in the invocation log's HTTP
// status (its Error says which): StatusInterrupted for one interrupted by a
// shutdown, River's timeout or a crash of the server running it, or that
// could not start and is tried again; StatusCancelled (nginx's "client
// closed request") for one cancelled because its job was deleted.
const (
	StatusInterrupted = 503
	StatusCancelled   = 499
)

// CancelledReason is RunOutcome.Interrupted of a run cancelled by its owner.
const CancelledReason = "cancelled"

// RunOutcome is how a run ended.
type RunOutcome struct {
	OK          bool
	Interrupted string // why the run did not finish (a shutdown, a crash, CancelledReason), or ""
	TimedOut    bool
	Result      string // the last stdout line, when OK
	Message     string // why it failed (stderr, or the timeout), when not OK
	Output      string // everything the run wrote: stdout, then stderr
}

// Recorder takes invocation records without blocking (the proxy's, or the
// store's InvocationWriter).
type Recorder interface {
	Record(store.Invocation) bool
}

// Runner runs functions as one-shot processes and records each run.
type Runner struct {
	Driver driver.Driver
	// Log records the runs; nil records none.
	Log Recorder
	// Margin is added to a function's timeout for the driver to report it.
	Margin time.Duration
}

// Run runs spec with the function's timeout (plus Margin), and reads the
// outcome. An error is the platform's, not the run's; a driver that overran
// the timeout without reporting it still yields a timeout.
func (r *Runner) Run(ctx context.Context, spec driver.RunSpec) (RunOutcome, error) {
	timeout := spec.Config.TimeoutSec
	runCtx, cancel := context.WithTimeout(ctx, time.Duration(timeout)*time.Second+r.Margin)
	defer cancel()
	res, err := r.Driver.Run(runCtx, spec)
	if err != nil && ctx.Err() == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		return RunOutcome{TimedOut: true, Message: fmt.Sprintf("timed out after %d s", timeout)}, nil
	}
	if err != nil {
		return RunOutcome{}, err
	}
	return OutcomeOf(res, timeout), nil
}

// OutcomeOf reads a run result: exit 0 succeeds with the last non-empty
// stdout line as the result; a timeout (or exit 124) fails with "timed out
// after N s"; any other exit fails with stderr as the message.
func OutcomeOf(res driver.RunResult, timeoutSec int) RunOutcome {
	out := RunOutcome{Output: res.Stdout}
	if res.Stderr != "" {
		if out.Output != "" && !strings.HasSuffix(out.Output, "\n") {
			out.Output += "\n"
		}
		out.Output += res.Stderr
	}
	switch {
	case res.TimedOut || res.ExitCode == 124:
		out.TimedOut, out.Message = true, fmt.Sprintf("timed out after %d s", timeoutSec)
	case res.ExitCode != 0:
		out.Message = strings.TrimSpace(res.Stderr)
		if out.Message == "" {
			out.Message = fmt.Sprintf("the function exited with code %d and wrote nothing to stderr", res.ExitCode)
		}
	default:
		out.OK, out.Result = true, lastLine(res.Stdout)
	}
	return out
}

// lastLine returns the last non-blank line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, " \t\r\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Record records a run of kind (job or cron) that ran from started to
// ended in the invocation log, at path (the run's name); false when the
// log's buffer was full and the record is lost.
func (r *Runner) Record(kind store.TriggerKind, spec driver.RunSpec, path string, out RunOutcome, started, ended time.Time) bool {
	if r.Log == nil {
		return true
	}
	status := 200
	switch {
	case out.Interrupted == CancelledReason:
		status = StatusCancelled
	case out.Interrupted != "":
		status = StatusInterrupted
	case out.TimedOut:
		status = 504
	case !out.OK:
		status = 500
	}
	return r.Log.Record(store.Invocation{
		ID: store.NewInvocationID(started), Namespace: spec.Namespace, Function: spec.Function, Version: spec.Version,
		Trigger: kind, Path: path, Status: status, Duration: ended.Sub(started), BytesIn: int64(len(spec.Event)),
		BytesOut: int64(len(out.Result)), Error: out.Message, Log: out.Output, StartedAt: started, EndedAt: ended,
	})
}
