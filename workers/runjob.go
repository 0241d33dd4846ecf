package workers

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/invoke"
	"github.com/slessio/sless/outbox"
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
	var dead invoke.RunOutcome // the row of an attempt a crash killed, if any
	done := false
	_, err := w.store.Execute(ctx, md, func(tx *store.Tx) error {
		done, dead = false, invoke.RunOutcome{}
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
				msg = dead.Message
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
	if err == nil && dead.Interrupted != "" {
		// The attempt that died could record nothing: this is its row.
		w.recordAttempt(ctx, store.InvocationJob, spec, runPath(a), dead, w.now(), !done, attrs...)
	}
	if err != nil || done {
		return err
	}

	started := w.now()
	out, err := w.runner.Run(ctx, spec)
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
		if _, err := w.cmd.RecordRunOutcomeTx(ctx, tx, ref, a.RunID, runCommand(out)); err != nil {
			return err
		}
		return completeTx(ctx, tx.Tx, job)
	})
	if err == nil {
		w.recordRun(store.InvocationJob, spec, runPath(a), out, started)
		w.log.InfoContext(ctx, "job run finished", "namespace", a.Namespace, "job", a.Job, "run_id", a.RunID, "ok", out.OK)
	}
	return err
}

// runCommand is a run's outcome as the command layer records it.
func runCommand(o invoke.RunOutcome) command.RunOutcome {
	return command.RunOutcome{OK: o.OK, Result: o.Result, Message: o.Message, Output: o.Output}
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
func (w *Workers) runInterrupted(ctx context.Context, job *river.Job[outbox.RunJobArgs], spec driver.RunSpec, why string, out invoke.RunOutcome, started time.Time) error {
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
		if _, err := w.cmd.RecordRunOutcomeTx(octx, tx, command.Ref{Namespace: a.Namespace, Name: a.Job}, a.RunID, runCommand(out)); err != nil {
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
