package workers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/invoke"
	"github.com/slessio/sless/store"
)

// The attempts of a run, job run or cron run alike, follow one set of rules,
// which live here and which both workers ask:
//
//   - Every attempt leaves exactly one row in the invocation log: its
//     outcome; 503 "could not start ...; it is tried again" when the driver
//     failed and River tries it again (startFailed); 503 or 499 when its
//     context ended, by Stop, River's timeout or a cancel
//     (interruptedAttempt); and an attempt a crash of its server killed,
//     which could record nothing, is recorded by the attempt after the rescue
//     (rescued) before that one runs or stops (crashedAttempt).
//   - An attempt whose side effects may be half done (a crash, a shutdown) is
//     made again only when the function is retry_safe (mayRunAgain, which
//     asks the retry table of package invoke), and only while River has an
//     attempt left.

// Why a run's attempt ended before its outcome: see Workers.interruption;
// interruptedByCrash is found by the next attempt (rescued), notStarted
// when the driver failed.
const (
	interruptedByShutdown = "interrupted by shutdown"
	interruptedByCrash    = "interrupted by a crash of the server running it"
	interruptedByCancel   = invoke.CancelledReason
	interruptedByTimeout  = "interrupted"
	notStarted            = "could not start"
)

// The messages recording an attempt a crash killed.
const (
	crashNotRetried = interruptedByCrash + "; not run again, since the function is not retry_safe"
	crashRetried    = interruptedByCrash + "; run again, since the function is retry_safe"
)

// mayRunAgain says whether an attempt of a run of kind (job or cron)
// interrupted for why is made again, by invoke's retry table: a shutdown or
// a crash of the process may have left the function's side effects half
// done, so only a RetrySafe function runs again; a cancelled run never
// does; one River's timeout ended does, as any attempt without an answer.
func mayRunAgain(kind store.TriggerKind, why string, cfg domain.FunctionConfig) bool {
	outcome := invoke.NoAnswer
	switch why {
	case interruptedByShutdown, interruptedByCrash:
		outcome = invoke.Interrupted
	case interruptedByCancel:
		outcome = invoke.Cancelled
	}
	return invoke.RetryAgain(kind, outcome, cfg.RetrySafe)
}

// interruption says why the job's context ended, or "" while it runs: the
// job was cancelled (CancelRunTx), Stop interrupted it, or River's timeout
// (or a stop before the drain) ended it.
func (w *Workers) interruption(ctx context.Context) string {
	switch {
	case ctx.Err() == nil:
		return ""
	case errors.Is(context.Cause(ctx), rivertype.ErrJobCancelledRemotely):
		return interruptedByCancel
	case w.stopping.Load():
		return interruptedByShutdown
	}
	return interruptedByTimeout
}

// crashedAttempt is the row of an attempt a crash of its server killed, and
// whether the run is made again: not when gone says why it can no longer
// run (its version or trigger is gone), else only when the function is
// retry_safe.
func crashedAttempt(kind store.TriggerKind, cfg domain.FunctionConfig, gone string) (invoke.RunOutcome, bool) {
	out := invoke.RunOutcome{Interrupted: interruptedByCrash, Message: crashNotRetried}
	again := gone == "" && mayRunAgain(kind, interruptedByCrash, cfg)
	switch {
	case gone != "":
		out.Message = interruptedByCrash + "; not run again: " + gone
	case again:
		out.Message = crashRetried
	}
	return out, again
}

// startFailed is the outcome of an attempt the driver could not start, and
// whether River tries it again: a 503 row saying so when it does, else the
// run's failure (giveUp).
func startFailed(row *rivertype.JobRow, err error) (invoke.RunOutcome, bool) {
	msg := fmt.Sprintf("the run could not start (attempt %d): %s", row.Attempt, platformMessage(err))
	if giveUp(row, err) {
		return invoke.RunOutcome{Message: msg}, false
	}
	return invoke.RunOutcome{Interrupted: notStarted, Message: msg + "; it is tried again"}, true
}

// interruptedAttempt is the row of an attempt whose context ended for why
// (see interruption) after it produced out, and whether the run is made
// again (mayRunAgain). One that may run again but has no attempt left is
// not: River would discard its job without an outcome.
func interruptedAttempt(kind store.TriggerKind, why string, cfg domain.FunctionConfig, row *rivertype.JobRow, out invoke.RunOutcome) (invoke.RunOutcome, bool) {
	out.OK, out.Interrupted, out.Message = false, why, why
	again := mayRunAgain(kind, why, cfg)
	switch {
	case again && row.Attempt >= row.MaxAttempts:
		again = false
		out.Message = why + "; not run again: it has no attempt left"
	case why == interruptedByShutdown && again:
		out.Message = why + "; it runs again on the next start (the function is retry-safe)"
	}
	return out, again
}

// recordAttempt records an attempt that ended without an outcome
// (out.interrupted says why) in the invocation log, and logs it with attrs
// naming the run and whether it is made again.
func (w *Workers) recordAttempt(ctx context.Context, kind store.TriggerKind, spec driver.RunSpec, path string, out invoke.RunOutcome, started time.Time, again bool, attrs ...any) {
	w.recordRun(kind, spec, path, out, started)
	w.log.WarnContext(ctx, string(kind)+" run "+out.Interrupted, append(attrs, "retried", again)...)
}
