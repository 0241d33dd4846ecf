package workers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// maxConverge bounds the rounds of one level-triggered job; a desired state
// that keeps changing is handed over to a fresh job.
const maxConverge = 5

// converge is the loop the rollout and schedule workers share: apply the
// desired state want through the driver, then in one transaction complete the
// job, re-read the desired state and, when it is unchanged, record the
// outcome; when it changed meanwhile, roll back and go again.
//
// Completing the job first in that transaction closes the race with a change
// whose own job was skipped as a duplicate of this running one: River's
// unique insert locks this job's row, so the completion waits for that change
// to commit, and the re-read after it sees the change.
//
// apply's error is the driver's. applyBounded retries it until the rollout
// timeout (Config.RolloutTimeout, shared by the rounds of one attempt), after
// which it is final: record gets it, as it gets a failure giveUp says is
// final. Only a stop or River's timeout leaves the job for River to retry. It
// returns the state it recorded (or handed over).
func converge[S interface{ same(S) bool }, A river.JobArgs](ctx context.Context, w *Workers, job *river.Job[A], what string, want S,
	apply func(context.Context, S) error, reread func(*store.Tx) (S, error), record func(*store.Tx, S, error) error) (S, error) {
	actx, cancel := context.WithTimeout(ctx, w.cfg.RolloutTimeout)
	defer cancel()
	for round := 1; ; round++ {
		applyErr := applyBounded(ctx, actx, w, job.JobRow, what, func(c context.Context) error { return apply(c, want) })
		if ierr := interrupted(ctx, what); ierr != nil {
			return want, ierr
		}
		if applyErr != nil && !giveUp(job.JobRow, applyErr) {
			return want, fmt.Errorf("%s: %w", what, applyErr)
		}
		var now S
		_, err := w.store.Execute(ctx, meta(job.Kind, job.ID), func(tx *store.Tx) error {
			if err := completeTx(ctx, tx.Tx, job); err != nil {
				return err
			}
			var err error
			if now, err = reread(tx); err != nil {
				return err
			}
			switch {
			case !now.same(want) && round < maxConverge:
				return errChanged
			case !now.same(want):
				w.log.WarnContext(ctx, "desired state keeps changing; handing over to a new job", "job", what)
				return w.insertJobs(ctx, tx, job.Args)
			}
			return record(tx, want, applyErr)
		})
		if !errors.Is(err, errChanged) {
			return want, err
		}
		want = now
	}
}

// applyBounded calls apply (with actx, which ends at the rollout timeout)
// until it succeeds or fails for good (giveUp). A retryable failure is tried
// again after a short backoff (0.5 s doubling to 15 s) instead of River's
// backoff, which took hours over ten attempts and left a function "being
// started" all along; when actx ends first the last failure becomes final,
// EUNPROCESSABLE "could not be done within <timeout>". ctx is the job's: when
// it ends, apply's error is returned as is (interrupted).
func applyBounded(ctx, actx context.Context, w *Workers, row *rivertype.JobRow, what string, apply func(context.Context) error) error {
	backoff := 500 * time.Millisecond
	for {
		err := apply(actx)
		if err == nil || ctx.Err() != nil || giveUp(row, err) {
			return err
		}
		if actx.Err() == nil {
			w.log.WarnContext(ctx, "workers: retrying", "job", what, "in", backoff, "error", err)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
				backoff = min(2*backoff, 15*time.Second)
				continue
			case <-actx.Done():
				t.Stop()
			}
		}
		if ctx.Err() != nil {
			return err
		}
		return domain.Errorf(domain.EUNPROCESSABLE, "%s could not be done within %s: %s", what, w.cfg.RolloutTimeout, platformMessage(err))
	}
}
