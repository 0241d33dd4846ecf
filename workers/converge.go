package workers

import (
	"context"
	"errors"
	"fmt"

	"github.com/riverqueue/river"

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
// apply's error is the driver's: retried by River unless giveUp says the
// failure is final, in which case record gets it. It returns the state it
// recorded (or handed over).
func converge[S interface{ same(S) bool }, A river.JobArgs](ctx context.Context, w *Workers, job *river.Job[A], what string, want S,
	apply func(S) error, reread func(*store.Tx) (S, error), record func(*store.Tx, S, error) error) (S, error) {
	for round := 1; ; round++ {
		applyErr := apply(want)
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
