package command

import (
	"context"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// RolloutOutcome is what converging a function's workload came to, as the
// rollout worker saw it.
type RolloutOutcome struct {
	// Version is the version rolled out; 0 when none is built (nothing was
	// deployed, so there is no rollout to record).
	Version int
	// Replicas is how many processes the workload was asked to run: 0 when
	// none of its triggers that it serves is enabled (scaled to zero).
	Replicas int
	// Endpoint is where the workload serves, when it does.
	Endpoint string
	// Failed says the driver could not run the version, with Message.
	Failed  bool
	Message string
}

// RecordRolloutTx records in tx, the caller's transaction, what a rollout of
// function f came to: RolloutCompleted or RolloutFailed for its version;
// whether each trigger the workload serves (domain.TriggerTypeInfo.Workload:
// http) is active, that is the workload runs and the trigger is enabled;
// and for each other trigger the job that serves it (outbox.TriggerJob: a
// cron trigger's schedule), which follows the active version. f and
// triggers (the function's) are the aggregates the caller loaded in tx and
// found the outcome still due on: their appends are checked against the
// streams as loaded then, so a change committed since makes tx lose the
// race and the caller decide again. The rollout worker completes its River
// job in tx.
//
// Errors: ENOTFOUND (f was deleted), the store's.
func (c *Commands) RecordRolloutTx(ctx context.Context, tx *store.Tx, f *domain.Function, triggers []domain.Trigger, out RolloutOutcome) error {
	now := c.now()
	running := out.Version > 0 && out.Replicas > 0 && !out.Failed
	if out.Version > 0 {
		if _, err := decideAppend(ctx, tx, domain.FunctionStream(f.Namespace, f.Name), f, func() ([]domain.Event, error) {
			if out.Failed {
				return f.FailRollout(out.Version, out.Message, now)
			}
			return f.CompleteRollout(out.Version, out.Endpoint, now)
		}, nil); err != nil {
			return err
		}
	}
	for i := range triggers {
		t := &triggers[i]
		var err error
		if info, _ := t.Type.Info(); info.Workload {
			err = setTriggerActive(ctx, tx, t, running && t.Enabled, now)
		} else { // a job of its own serves it, and follows the active version
			err = tx.Append(ctx, domain.TriggerStream(t.Namespace, t.Name), t, nil, outbox.TriggerJob(*t))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// SetTriggerActiveTx records in tx, the caller's transaction, whether
// trigger t is active as its worker found it (TriggerActiveChanged; nothing
// when it is unchanged or t deleted). t is the aggregate the caller loaded
// in tx and decided on, as for RecordRolloutTx; the worker completes its
// River job in tx.
//
// Errors: the store's.
func (c *Commands) SetTriggerActiveTx(ctx context.Context, tx *store.Tx, t *domain.Trigger, active bool) error {
	return setTriggerActive(ctx, tx, t, active, c.now())
}

// setTriggerActive appends t's active flag, as the driver's outcome says it.
func setTriggerActive(ctx context.Context, tx *store.Tx, t *domain.Trigger, active bool, now time.Time) error {
	_, err := decideAppend(ctx, tx, domain.TriggerStream(t.Namespace, t.Name), t,
		func() ([]domain.Event, error) { return t.SetActive(active, now), nil }, nil)
	return err
}
