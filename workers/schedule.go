package workers

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// cronState is what a cron trigger's schedule should be, as the events say now.
type cronState struct {
	exists   bool // a cron trigger of that name exists
	enabled  bool
	schedule string
	version  int             // the active built version of its function; 0 when none
	workload driver.Workload // the version to run; only its namespace and function while version is 0
}

func (c cronState) same(o cronState) bool {
	return c.exists == o.exists && c.enabled == o.enabled && c.schedule == o.schedule && c.version == o.version
}

// active is what the trigger reports: it fires (enabled) and there is a built version to fire.
func (c cronState) active() bool { return c.exists && c.enabled && c.version > 0 }

// cronStateOf is the schedule trigger t should have. This worker is the cron
// type's (outbox.TriggerJob), so its trigger is one of that type: a name
// taken since by a trigger of another type has no schedule.
func cronStateOf(t *domain.Trigger, f *domain.Function) cronState {
	c := cronState{exists: t.Exists && t.Type == domain.TriggerCron, enabled: t.Enabled, schedule: t.Schedule,
		workload: driver.Workload{Namespace: t.Namespace, Function: t.Function}}
	if !c.exists {
		return c
	}
	if v, ok := f.Runnable(); ok {
		c.version = v.Number
		c.workload = driver.Workload{Namespace: f.Namespace, Function: f.Name, Version: v.Number, Image: v.Image, Config: v.Config}
	}
	return c
}

// scheduleWorker converges one cron trigger (level-triggered, like rollouts):
// for a driver with a Scheduler it applies the schedule (or removes it when
// the trigger or its function's active version is gone); without one the
// leader's cron enqueuer fires the slots and there is nothing to apply. Both
// record TriggerActiveChanged (active = enabled and a built active version
// exists), with the job completed in the same transaction, re-reading the
// state after the completion as the rollout worker does.
type scheduleWorker struct {
	river.WorkerDefaults[outbox.ScheduleArgs]
	w *Workers
}

// Timeout leaves the rollout timeout to converge, as for rollouts.
func (s *scheduleWorker) Timeout(*river.Job[outbox.ScheduleArgs]) time.Duration {
	return s.w.cfg.convergeTimeout()
}

// Work converges the trigger's schedule, see scheduleWorker.
func (s *scheduleWorker) Work(ctx context.Context, job *river.Job[outbox.ScheduleArgs]) error {
	w, a := s.w, job.Args
	want, err := w.cronState(ctx, a.Namespace, a.Trigger)
	if err != nil {
		return err
	}
	var t *domain.Trigger
	_, err = converge(ctx, w, job, "schedule "+a.Namespace+"/"+a.Trigger, want,
		func(actx context.Context, c cronState) error { return w.applySchedule(actx, a, c) },
		func(tx *store.Tx) (cronState, error) {
			t = domain.NewTrigger(a.Namespace, a.Trigger)
			if err := tx.Load(ctx, domain.TriggerStream(a.Namespace, a.Trigger), t); err != nil {
				return cronState{}, err
			}
			f := domain.NewFunction(a.Namespace, t.Function)
			if t.Function != "" {
				if err := tx.Load(ctx, domain.FunctionStream(a.Namespace, t.Function), f); err != nil {
					return cronState{}, err
				}
			}
			return cronStateOf(t, f), nil
		},
		func(tx *store.Tx, c cronState, applyErr error) error {
			return w.cmd.SetTriggerActiveTx(ctx, tx, t, c.active() && applyErr == nil)
		})
	return err
}

// applySchedule makes a Scheduler driver's schedule match c; drivers without
// one need nothing applied.
func (w *Workers) applySchedule(ctx context.Context, a outbox.ScheduleArgs, c cronState) error {
	switch {
	case w.scheduler == nil:
		return nil
	case !c.exists || c.version == 0:
		return w.scheduler.RemoveSchedule(ctx, a.Namespace, a.Trigger)
	}
	return w.scheduler.ApplySchedule(ctx, driver.CronSpec{Workload: c.workload, Trigger: a.Trigger, Schedule: c.schedule, Enabled: c.enabled})
}

// cronState reads a cron trigger and its function outside a transaction.
func (w *Workers) cronState(ctx context.Context, ns, name string) (cronState, error) {
	t := domain.NewTrigger(ns, name)
	if err := w.read(ctx, domain.TriggerStream(ns, name), t); err != nil {
		return cronState{}, err
	}
	f := domain.NewFunction(ns, t.Function)
	if t.Function != "" {
		if err := w.read(ctx, domain.FunctionStream(ns, t.Function), f); err != nil {
			return cronState{}, err
		}
	}
	return cronStateOf(t, f), nil
}
