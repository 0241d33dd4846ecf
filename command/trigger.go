package command

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// CreateTriggerInput is a new trigger of an existing function.
type CreateTriggerInput struct {
	Namespace string
	Name      string
	Spec      domain.TriggerSpec
}

// CreateTrigger creates a trigger: an http trigger rolls its function out, a
// cron trigger gets its schedule.
//
// Errors: EINVALID, ECONFLICT (the name exists), EUNPROCESSABLE (field
// "function": no such function).
func (c *Commands) CreateTrigger(ctx context.Context, meta store.Metadata, in CreateTriggerInput) (domain.Trigger, error) {
	if err := domain.ValidateName("name", in.Name); err != nil { // before its stream is read: PostgreSQL cannot hold every string
		return domain.Trigger{}, err
	}
	now := c.now()
	t, _, err := run(ctx, c, meta, newTrigger(Ref{in.Namespace, in.Name}), func(tx *store.Tx, t *domain.Trigger) error {
		return changeTrigger(ctx, tx, t, func() ([]domain.Event, error) {
			evs, err := t.Create(in.Spec, now)
			if err != nil {
				return nil, err
			}
			return evs, requireFunction(ctx, tx, in.Namespace, in.Spec.Function)
		})
	})
	return t, err
}

// SetTriggerEnabled switches a trigger on or off (an http function with no
// enabled trigger scales to zero); the workload or schedule follows
// asynchronously, which Trigger.Active reports.
//
// Errors: ENOTFOUND.
func (c *Commands) SetTriggerEnabled(ctx context.Context, meta store.Metadata, in Ref, enabled bool) (domain.Trigger, error) {
	now := c.now()
	t, _, err := run(ctx, c, meta, newTrigger(in), func(tx *store.Tx, t *domain.Trigger) error {
		return changeTrigger(ctx, tx, t, func() ([]domain.Event, error) { return t.SetEnabled(enabled, now) })
	})
	return t, err
}

// DeleteTrigger deletes a trigger with the job that stops its workload or
// schedule.
//
// Errors: ENOTFOUND.
func (c *Commands) DeleteTrigger(ctx context.Context, meta store.Metadata, in Ref) error {
	now := c.now()
	_, err := c.cfg.Store.Execute(ctx, meta, func(tx *store.Tx) error {
		return deleteTrigger(ctx, tx, in, now)
	})
	return err
}

// newTrigger returns a maker of the empty aggregate of trigger in.
func newTrigger(in Ref) func() *domain.Trigger {
	return func() *domain.Trigger { return domain.NewTrigger(in.Namespace, in.Name) }
}

// deleteTrigger deletes trigger in in tx (ENOTFOUND when it does not exist).
func deleteTrigger(ctx context.Context, tx *store.Tx, in Ref, now time.Time) error {
	t := domain.NewTrigger(in.Namespace, in.Name)
	return changeTrigger(ctx, tx, t, func() ([]domain.Event, error) { return t.Delete(now) })
}

// changeTrigger is change on t's stream with the jobs its events cause,
// chosen from the state before them (outbox.TriggerJobs needs the type and
// function, which a delete folds away).
func changeTrigger(ctx context.Context, tx *store.Tx, t *domain.Trigger, decide func() ([]domain.Event, error)) error {
	var before domain.Trigger
	_, err := change(ctx, tx, domain.TriggerStream(t.Namespace, t.Name), t,
		func() ([]domain.Event, error) { before = *t; return decide() },
		func(evs []domain.Event) []river.InsertManyParams { return outbox.TriggerJobs(before, evs) })
	return err
}
