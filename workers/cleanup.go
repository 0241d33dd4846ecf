package workers

import (
	"context"
	"fmt"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/outbox"
)

// cleanupWorker removes what a deleted function leaves behind: every workload,
// schedule and build artifact (Driver.Remove, which covers a Scheduler's
// schedules too) and its stored code (when the code store can delete). Both
// are idempotent, so a rerun simply does it again.
//
// The name may have been taken by a function created again since. Its
// workload has the same names as the deleted one's: if it exists when the
// cleanup starts, the cleanup leaves the workload alone and a rollout
// converges it instead; if it is created while Driver.Remove runs, a rollout
// after the removal deploys it again. Its code is kept apart by the
// incarnation in the code keys: the cleanup deletes only the code of the
// incarnation it cleans up (CleanupArgs.Incarnation), whatever exists now.
// A cleanup queued by an older server names no incarnation: it deletes only
// the code stored before keys named incarnations, and only while no function
// of that name exists, since such code may be the new function's (uploaded
// before the upgrade). Code that incarnation-less cleanup leaves behind is
// that of a function created again before the upgrade, deleted with it.
type cleanupWorker struct {
	river.WorkerDefaults[outbox.CleanupArgs]
	w *Workers
}

// Work cleans up, see cleanupWorker.
func (c *cleanupWorker) Work(ctx context.Context, job *river.Job[outbox.CleanupArgs]) error {
	w, a := c.w, job.Args
	exists, incarnation, err := c.current(ctx, a)
	if err != nil {
		return err
	}
	if exists && incarnation == a.Incarnation { // never queued so; the function is not deleted
		w.log.WarnContext(ctx, "cleanup skipped: the function it names exists", "namespace", a.Namespace, "function", a.Function, "incarnation", a.Incarnation)
		return nil
	}
	if exists {
		w.log.InfoContext(ctx, "cleanup leaves the workload alone: the function was created again", "namespace", a.Namespace, "function", a.Function)
		if _, err := w.client.Insert(ctx, outbox.RolloutArgs{Namespace: a.Namespace, Function: a.Function}, nil); err != nil {
			return err
		}
	} else {
		if err := w.cfg.Driver.Remove(ctx, a.Namespace, a.Function); err != nil {
			return fmt.Errorf("remove %s/%s: %w", a.Namespace, a.Function, err)
		}
		// Created again while Remove ran: Remove may have taken its workload.
		again, _, err := c.current(ctx, a)
		if err != nil {
			return err
		}
		if again {
			if _, err := w.client.Insert(ctx, outbox.RolloutArgs{Namespace: a.Namespace, Function: a.Function}, nil); err != nil {
				return err
			}
		}
	}
	if w.deleter != nil && (a.Incarnation > 0 || !exists) {
		if err := w.deleter.DeleteCode(ctx, a.Namespace, a.Function, a.Incarnation); err != nil {
			return fmt.Errorf("delete the code of %s/%s (incarnation %d): %w", a.Namespace, a.Function, a.Incarnation, err)
		}
	}
	w.log.InfoContext(ctx, "cleanup finished", "namespace", a.Namespace, "function", a.Function, "incarnation", a.Incarnation)
	return nil
}

// current reports whether a function of the cleaned-up name exists now (one
// created again since the delete), and its incarnation.
func (c *cleanupWorker) current(ctx context.Context, a outbox.CleanupArgs) (exists bool, incarnation int, err error) {
	f := domain.NewFunction(a.Namespace, a.Function)
	if err := c.w.read(ctx, domain.FunctionStream(a.Namespace, a.Function), f); err != nil {
		return false, 0, err
	}
	return f.Exists, f.Incarnation, nil
}
