package command

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// CreateJobInput is a new one-shot job of an existing function.
type CreateJobInput struct {
	Namespace string
	Name      string
	Spec      domain.JobSpec
}

// CreateJob creates a job; its first run is queued when Spec.RunID > 0.
//
// Errors: EINVALID, ECONFLICT (the name exists), EUNPROCESSABLE (field
// "function": no such function).
func (c *Commands) CreateJob(ctx context.Context, meta store.Metadata, in CreateJobInput) (domain.Job, error) {
	if err := domain.ValidateName("name", in.Name); err != nil { // before its stream is read: PostgreSQL cannot hold every string
		return domain.Job{}, err
	}
	now := c.now()
	j, _, err := run(ctx, c, meta, newJob(Ref{in.Namespace, in.Name}), func(tx *store.Tx, j *domain.Job) error {
		return changeJob(ctx, tx, j, func() ([]domain.Event, error) {
			evs, err := j.Create(in.Spec, now)
			if err != nil {
				return nil, err
			}
			return evs, requireFunction(ctx, tx, in.Namespace, in.Spec.Function)
		})
	})
	return j, err
}

// SetJobRunID sets a job's run id, Terraform's way of asking for a run: a
// larger one queues a run (started is true), the same one changes nothing.
//
// Errors: ENOTFOUND, EINVALID (a smaller run id), EUNPROCESSABLE (the
// function is gone).
func (c *Commands) SetJobRunID(ctx context.Context, meta store.Metadata, in Ref, runID int64) (j domain.Job, started bool, err error) {
	return c.rerun(ctx, meta, in, func(*domain.Job) int64 { return runID })
}

// RerunJob runs a job again: its run id grows by one.
//
// Errors: ENOTFOUND, EUNPROCESSABLE (the function is gone).
func (c *Commands) RerunJob(ctx context.Context, meta store.Metadata, in Ref) (domain.Job, error) {
	j, _, err := c.rerun(ctx, meta, in, func(j *domain.Job) int64 { return j.RunID + 1 })
	return j, err
}

// rerun sets the run id that next returns for the job's current state.
func (c *Commands) rerun(ctx context.Context, meta store.Metadata, in Ref, next func(*domain.Job) int64) (domain.Job, bool, error) {
	now := c.now()
	j, evs, err := run(ctx, c, meta, newJob(in), func(tx *store.Tx, j *domain.Job) error {
		return changeJob(ctx, tx, j, func() ([]domain.Event, error) {
			evs, err := j.SetRunID(next(j), now)
			if err != nil || len(evs) == 0 {
				return evs, err
			}
			return evs, requireFunction(ctx, tx, in.Namespace, j.Function)
		})
	})
	return j, len(evs) > 0, err
}

// DeleteJob deletes a job; its unfinished runs are cancelled.
//
// Errors: ENOTFOUND.
func (c *Commands) DeleteJob(ctx context.Context, meta store.Metadata, in Ref) error {
	now := c.now()
	_, err := c.cfg.Store.Execute(ctx, meta, func(tx *store.Tx) error {
		return deleteJob(ctx, tx, in, now)
	})
	return err
}

// deleteJob deletes job in in tx (ENOTFOUND when it does not exist) and
// cancels its unfinished runs: a run still going is stopped once tx
// commits, and recorded as cancelled.
func deleteJob(ctx context.Context, tx *store.Tx, in Ref, now time.Time) error {
	j := domain.NewJob(in.Namespace, in.Name)
	if err := changeJob(ctx, tx, j, func() ([]domain.Event, error) { return j.Delete(now) }); err != nil {
		return err
	}
	return outbox.CancelRunTx(ctx, tx.Tx, in.Namespace, in.Name)
}

// newJob returns a maker of the empty aggregate of job in.
func newJob(in Ref) func() *domain.Job {
	return func() *domain.Job { return domain.NewJob(in.Namespace, in.Name) }
}

// changeJob is change on j's stream with the runs its events request,
// chosen from the state before them (outbox.RunJobs counts incarnations).
func changeJob(ctx context.Context, tx *store.Tx, j *domain.Job, decide func() ([]domain.Event, error)) error {
	var before domain.Job
	_, err := change(ctx, tx, domain.JobStream(j.Namespace, j.Name), j,
		func() ([]domain.Event, error) { before = *j; return decide() },
		func(evs []domain.Event) []river.InsertManyParams { return outbox.RunJobs(&before, evs) })
	return err
}

// StartRunTx records in tx, the caller's transaction, that run runID of job
// in started on version (JobStarted), for the run_job worker, which
// completes its River job in tx. A run that is not the job's current one,
// or that started or finished already, records nothing (at-least-once
// delivery). It returns the job as tx leaves it.
//
// Errors: the store's.
func (c *Commands) StartRunTx(ctx context.Context, tx *store.Tx, in Ref, runID int64, version int) (domain.Job, error) {
	return c.changeRunTx(ctx, tx, in, func(j *domain.Job, now time.Time) []domain.Event { return j.Start(runID, version, now) })
}

// RunOutcome is how a run of a job ended, as the worker that ran it saw it.
type RunOutcome struct {
	// OK says the run succeeded with Result; otherwise it failed with Message.
	OK bool
	// Result is the run's result: the last line it wrote to stdout.
	Result string
	// Message is why it failed: its stderr, a timeout, an interruption, or
	// why it could not run.
	Message string
	// Output is everything the run wrote, stdout then stderr.
	Output string
}

// RecordRunOutcomeTx records in tx, the caller's transaction, how run runID
// of job in ended (JobSucceeded or JobFailed), with the runs its events
// request (outbox.RunJobs, as for every change of a job; an outcome requests
// none). The worker that ran it completes its River job in tx, so that the
// outcome and the completion commit together. A run that is no longer the
// job's current one (a newer run was asked for, the job was deleted) or
// whose outcome is recorded records nothing (at-least-once delivery). It
// returns the job as tx leaves it.
//
// Errors: the store's (ECONFLICT after a lost race: store.Execute decides again).
func (c *Commands) RecordRunOutcomeTx(ctx context.Context, tx *store.Tx, in Ref, runID int64, out RunOutcome) (domain.Job, error) {
	return c.changeRunTx(ctx, tx, in, func(j *domain.Job, now time.Time) []domain.Event {
		if out.OK {
			return j.Succeed(runID, out.Result, out.Output, now)
		}
		return j.Fail(runID, out.Message, out.Output, now)
	})
}

// changeRunTx is changeJob in the caller's tx on job in, freshly loaded, with
// decide's events for the run.
func (c *Commands) changeRunTx(ctx context.Context, tx *store.Tx, in Ref, decide func(*domain.Job, time.Time) []domain.Event) (domain.Job, error) {
	j, now := domain.NewJob(in.Namespace, in.Name), c.now()
	err := changeJob(ctx, tx, j, func() ([]domain.Event, error) { return decide(j, now), nil })
	return *j, err
}
