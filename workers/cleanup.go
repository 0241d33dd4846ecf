package workers

import (
	"context"
	"fmt"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store/codestore"
)

// cleanupWorker removes what a deleted function leaves behind: every workload,
// schedule and build artifact (Driver.Remove, which covers a Scheduler's
// schedules too) and its stored code (when the code store can delete). Both
// are idempotent, so a rerun simply does it again.
//
// If the function was created again under the same name before the cleanup
// ran, the new function owns that name's workload and code (same keys): the
// cleanup then leaves both alone and a rollout converges the workload instead.
type cleanupWorker struct {
	river.WorkerDefaults[CleanupArgs]
	w *Workers
}

// Work cleans up, see cleanupWorker.
func (c *cleanupWorker) Work(ctx context.Context, job *river.Job[CleanupArgs]) error {
	w, a := c.w, job.Args
	f := domain.NewFunction(a.Namespace, a.Function)
	if err := w.read(ctx, domain.FunctionStream(a.Namespace, a.Function), f); err != nil {
		return err
	}
	if f.Exists {
		w.log.InfoContext(ctx, "cleanup skipped: the function was created again", "namespace", a.Namespace, "function", a.Function)
		_, err := w.client.Insert(ctx, RolloutArgs{Namespace: a.Namespace, Function: a.Function}, nil)
		return err
	}
	if err := w.cfg.Driver.Remove(ctx, a.Namespace, a.Function); err != nil {
		return fmt.Errorf("remove %s/%s: %w", a.Namespace, a.Function, err)
	}
	if w.deleter != nil {
		if err := w.deleter.Delete(ctx, codestore.FunctionPrefix(a.Namespace, a.Function)); err != nil {
			return fmt.Errorf("delete the code of %s/%s: %w", a.Namespace, a.Function, err)
		}
	}
	w.log.InfoContext(ctx, "cleanup finished", "namespace", a.Namespace, "function", a.Function)
	return nil
}
