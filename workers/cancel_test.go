package workers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/workers"
)

// deleteJob deletes a job as the API's DELETE does: JobDeleted and the
// cancellation of its runs in one transaction.
func (h *harness) deleteJob(name string) {
	h.t.Helper()
	ctx := context.Background()
	stream := domain.JobStream(h.ns, name)
	_, err := h.api.Execute(ctx, apiMeta, func(tx *store.Tx) error {
		j := domain.NewJob(h.ns, name)
		if err := tx.Load(ctx, stream, j); err != nil {
			return err
		}
		evs, err := j.Delete(h.now())
		if err != nil {
			return err
		}
		if err := tx.Append(ctx, stream, j, evs); err != nil {
			return err
		}
		return outbox.CancelRunTx(ctx, tx.Tx, h.ns, name)
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// TestDeleteCancelsRunningRun deletes a job while its run is in the driver:
// the run's context is cancelled (the driver's Run ends), the invocation is
// recorded as cancelled, nothing is appended after the deletion and River
// does not retry.
func TestDeleteCancelsRunningRun(t *testing.T) {
	t.Parallel()
	h := setup(t)
	rec := &memRecorder{}
	h.start(func(c *workers.Config) { c.Invocations = rec })
	h.readyFunction("fn", pySpec)
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onRun = func(ctx context.Context, r driver.RunSpec) (driver.RunResult, error) {
			started <- struct{}{}
			<-ctx.Done()
			ended <- context.Cause(ctx)
			return driver.RunResult{}, domain.Errorf(domain.EUNAVAILABLE, "run: %v", ctx.Err())
		}
	})
	h.createJob("long", "fn", nil, 1)
	<-started
	h.deleteJob("long")
	select {
	case cause := <-ended:
		if !errors.Is(cause, rivertype.ErrJobCancelledRemotely) {
			t.Fatalf("the run's context ended with %v; want River's remote cancellation", cause)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run's context was not cancelled after the delete")
	}
	h.eventually(10*time.Second, func() error {
		if s, _ := h.jobAttempts("run_job", "job", "long"); s != "cancelled" {
			return errorf("run job %q; want cancelled", s)
		}
		return nil
	})
	if got := rec.statuses("long/1"); len(got) != 1 || !strings.HasPrefix(got[0], "499 cancelled") {
		t.Fatalf("invocations %q; want one 499 cancelled", got)
	}
	var last string
	if err := h.pool.QueryRow(context.Background(), `SELECT type FROM events WHERE stream_id = $1
		ORDER BY stream_version DESC LIMIT 1`, domain.JobStream(h.ns, "long")).Scan(&last); err != nil || last != domain.EventJobDeleted {
		t.Fatalf("last event %q (%v); want %s", last, err, domain.EventJobDeleted)
	}
	if runs := h.driver.runsNamed(func(r driver.RunSpec) bool { return r.Name == "long" }); len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
}

// TestCancelRunTxOfWaitingRun: a run not yet taken is cancelled at once, and
// a job without runs is no error.
func TestCancelRunTxOfWaitingRun(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.createJob("later", "fn", nil, 1) // no workers: the run waits
	h.createJob("never", "fn", nil, 0) // no run requested
	h.deleteJob("later")
	h.deleteJob("never")
	if s, _ := h.jobAttempts("run_job", "job", "later"); s != "cancelled" {
		t.Fatalf("run job %q; want cancelled", s)
	}
}
