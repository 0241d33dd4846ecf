package workers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/outbox"

	"github.com/slessio/sless/driver"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// runJobWorker executes one run of a one-shot job:
//
//	load → (stale run_id or finished? complete) → JobStarted on the active
//	version (none built: JobFailed) → Driver.Run → JobSucceeded (last stdout
//	line) | JobFailed (stderr; "timed out after N s"), completed in the same transaction
//
// A run interrupted after JobStarted by a crash of its process (rescued, see
// liveness.go) or by Stop (shutdown timeout) runs again, on the version it
// started on, only when its function is RetrySafe; otherwise it fails with
// "interrupted by a crash" or "interrupted by shutdown", since its side
// effects may have happened. Once an outcome is recorded a rerun does
// nothing; a run cancelled through CancelRunTx (the job was deleted) stops
// and is not retried.
// Every attempt that reached JobStarted leaves one row in the invocation
// log, by the rules attempt.go holds for job and cron runs alike.
type runJobWorker struct {
	river.WorkerDefaults[outbox.RunJobArgs]
	w *Workers
}

// Timeout is the longest function timeout plus a margin; each run is also
// bounded by its own function's timeout (Work), which the driver enforces.
func (r *runJobWorker) Timeout(*river.Job[outbox.RunJobArgs]) time.Duration { return maxRunTimeout }

// Work runs the job, see runJobWorker.
func (r *runJobWorker) Work(ctx context.Context, job *river.Job[outbox.RunJobArgs]) error {
	w, a := r.w, job.Args
	stream := domain.JobStream(a.Namespace, a.Job)
	ref := command.Ref{Namespace: a.Namespace, Name: a.Job}
	md := meta(job.Kind, job.ID)

	var spec driver.RunSpec
	var dead runOutcome // the row of an attempt a crash killed, if any
	done := false
	_, err := w.store.Execute(ctx, md, func(tx *store.Tx) error {
		done, dead = false, runOutcome{}
		j := domain.NewJob(a.Namespace, a.Job)
		if err := tx.Load(ctx, stream, j); err != nil {
			return err
		}
		if !j.Exists || j.RunID != a.RunID || j.Finished() || !outbox.SameIncarnation(a.Incarnation, j.Incarnation) { // deleted, superseded or already recorded
			done = true
			return completeTx(ctx, tx.Tx, job)
		}
		f := domain.NewFunction(a.Namespace, j.Function)
		if err := tx.Load(ctx, domain.FunctionStream(a.Namespace, j.Function), f); err != nil {
			return err
		}
		v, ok := f.Runnable()
		n := v.Number
		if j.Phase == domain.JobPhaseRunning { // an interrupted attempt started it: keep its version
			n = j.Version
			v, _ = f.Version(n)
			ok = f.CanRun(v)
		}
		spec = driver.RunSpec{Workload: driver.Workload{Namespace: a.Namespace, Function: j.Function, Version: n, Image: v.Image, Config: v.Config},
			Name: a.Job, RunID: a.RunID, Event: j.Event}
		gone := "" // why the run cannot run, or ""
		if !ok {
			gone = fmt.Sprintf("function %q has no active built version to run", j.Function)
			if j.Phase == domain.JobPhaseRunning {
				gone = fmt.Sprintf("version %d of function %q, which this run started on, no longer exists", n, j.Function)
			}
		}
		again := gone == ""
		if j.Phase == domain.JobPhaseRunning && rescued(job.JobRow) { // the attempt before died running it
			dead, again = crashedAttempt(store.InvocationJob, v.Config, gone)
		}
		if !again {
			done = true
			msg := gone
			if msg == "" {
				msg = dead.message
			}
			if _, err := w.cmd.RecordRunOutcomeTx(ctx, tx, ref, a.RunID, command.RunOutcome{Message: msg}); err != nil {
				return err
			}
			return completeTx(ctx, tx.Tx, job)
		}
		_, err := w.cmd.StartRunTx(ctx, tx, ref, a.RunID, v.Number)
		return err
	})
	attrs := []any{"namespace", a.Namespace, "job", a.Job, "run_id", a.RunID}
	if err == nil && dead.interrupted != "" {
		// The attempt that died could record nothing: this is its row.
		w.recordAttempt(ctx, store.InvocationJob, spec, runPath(a), dead, w.now(), !done, attrs...)
	}
	if err != nil || done {
		return err
	}

	started := w.now()
	out, err := w.run(ctx, spec)
	if why := w.interruption(ctx); why != "" {
		return w.runInterrupted(ctx, job, spec, why, out, started)
	}
	if err != nil {
		var again bool
		if out, again = startFailed(job.JobRow, err); again {
			// River tries it again; this attempt's row says why it ended.
			w.recordAttempt(ctx, store.InvocationJob, spec, runPath(a), out, started, again, attrs...)
			return fmt.Errorf("run %s #%d: %w", stream, a.RunID, err)
		}
	}

	_, err = w.store.Execute(ctx, md, func(tx *store.Tx) error {
		if _, err := w.cmd.RecordRunOutcomeTx(ctx, tx, ref, a.RunID, out.command()); err != nil {
			return err
		}
		return completeTx(ctx, tx.Tx, job)
	})
	if err == nil {
		w.recordRun(store.InvocationJob, spec, runPath(a), out, started)
		w.log.InfoContext(ctx, "job run finished", "namespace", a.Namespace, "job", a.Job, "run_id", a.RunID, "ok", out.ok)
	}
	return err
}

// runOutcome is a run's result as the job events record it.
type runOutcome struct {
	ok          bool
	interrupted string // why the run did not finish (runInterrupted), or ""
	timedOut    bool
	result      string // the last stdout line, when ok
	message     string // why it failed (stderr, or the timeout), when not ok
	output      string // everything the run wrote: stdout, then stderr
}

// command is the outcome as the command layer records it.
func (o runOutcome) command() command.RunOutcome {
	return command.RunOutcome{OK: o.ok, Result: o.result, Message: o.message, Output: o.output}
}

// run runs spec with the function's timeout (plus a margin for the driver to
// report it), and reads the outcome. An error is the platform's, not the run's;
// a driver that overran the timeout without reporting it still yields a timeout.
func (w *Workers) run(ctx context.Context, spec driver.RunSpec) (runOutcome, error) {
	timeout := spec.Config.TimeoutSec
	runCtx, cancel := context.WithTimeout(ctx, time.Duration(timeout)*time.Second+runMargin)
	defer cancel()
	res, err := w.cfg.Driver.Run(runCtx, spec)
	if err != nil && ctx.Err() == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		return runOutcome{timedOut: true, message: fmt.Sprintf("timed out after %d s", timeout)}, nil
	}
	if err != nil {
		return runOutcome{}, err
	}
	return outcomeOf(res, timeout), nil
}

// outcomeOf reads a run result: exit 0 succeeds with the last non-empty
// stdout line as the result; a timeout (or exit 124) fails with "timed out
// after N s"; any other exit fails with stderr as the message.
func outcomeOf(res driver.RunResult, timeoutSec int) runOutcome {
	out := runOutcome{output: res.Stdout}
	if res.Stderr != "" {
		if out.output != "" && !strings.HasSuffix(out.output, "\n") {
			out.output += "\n"
		}
		out.output += res.Stderr
	}
	switch {
	case res.TimedOut || res.ExitCode == 124:
		out.timedOut, out.message = true, fmt.Sprintf("timed out after %d s", timeoutSec)
	case res.ExitCode != 0:
		out.message = strings.TrimSpace(res.Stderr)
		if out.message == "" {
			out.message = fmt.Sprintf("the function exited with code %d and wrote nothing to stderr", res.ExitCode)
		}
	default:
		out.ok, out.result = true, lastLine(res.Stdout)
	}
	return out
}

// lastLine returns the last non-blank line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, " \t\r\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// runPath is a job run's path in the invocation log.
func runPath(a outbox.RunJobArgs) string { return fmt.Sprintf("%s/%d", a.Job, a.RunID) }

// outcomeTimeout bounds the recording of an interrupted run, whose own
// context has ended.
const outcomeTimeout = 10 * time.Second

// runInterrupted records a job run whose context ended while it ran, and
// decides what follows: a cancelled run is not retried and fails only when
// its job still exists (a deleted job keeps its deletion); a run interrupted
// by the shutdown fails with that message unless the function is RetrySafe,
// in which case River runs it again on the next start, as after a timeout.
// One that may run again but has no attempt left fails too: River would
// discard the job and leave the run Running for ever.
func (w *Workers) runInterrupted(ctx context.Context, job *river.Job[outbox.RunJobArgs], spec driver.RunSpec, why string, out runOutcome, started time.Time) error {
	a := job.Args
	stream := domain.JobStream(a.Namespace, a.Job)
	out, retry := interruptedAttempt(store.InvocationJob, why, spec.Config, job.JobRow, out)
	w.recordAttempt(ctx, store.InvocationJob, spec, runPath(a), out, started, retry, "namespace", a.Namespace, "job", a.Job, "run_id", a.RunID)
	if retry {
		return fmt.Errorf("run %s #%d: %s: %w", stream, a.RunID, why, ctx.Err())
	}
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeTimeout)
	defer cancel()
	_, err := w.store.Execute(octx, meta(job.Kind, job.ID), func(tx *store.Tx) error {
		// A run that is no longer current, or finished, records nothing.
		if _, err := w.cmd.RecordRunOutcomeTx(octx, tx, command.Ref{Namespace: a.Namespace, Name: a.Job}, a.RunID, out.command()); err != nil {
			return err
		}
		if why == interruptedByCancel { // River cancels the job itself
			return nil
		}
		return completeTx(octx, tx.Tx, job)
	})
	if err != nil {
		return err
	}
	if why == interruptedByCancel {
		return river.JobCancel(fmt.Errorf("run %s #%d cancelled", stream, a.RunID))
	}
	return nil
}
