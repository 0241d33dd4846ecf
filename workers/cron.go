package workers

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// Cron triggers on drivers without a Scheduler (the local driver) are fired by
// the control plane:
//
//   - Every CronInterval the elected River leader inserts a cron_tick job
//     (a River periodic job, so one enqueuer for any number of replicas).
//   - The tick finds, in one query (store.ListFiringCronTriggers), every
//     enabled and active cron trigger whose function has an active version,
//     with the last slot it fired, and for each the latest due slot
//     (domain.ParseCron(...).Next) after that, and inserts a cron_run job for
//     it. Its unique key is (namespace, trigger, slot) in every job state, so
//     two ticks (two replicas around a leader change, or a tick retried)
//     never run a slot twice.
//   - The slots fired are recorded in the transaction that inserts their jobs
//     (store.RecordFiredSlotsTx, the table cron_fired: with 10,000 triggers,
//     reading them back from River's 800,000 completed cron_run jobs of a day
//     took the tick 0.6–1.3 s). The clock (Config.Clock) is injectable for
//     tests.
//
// Missed slots (the control plane was down, or the leader changed): they run
// at most once. After a gap only the latest due slot runs, and only when it
// is less than CronCatchUp old (default one hour) and after the trigger
// became active; older missed slots are skipped and logged. CronCatchUp stays
// below River's completed-job retention (24 h), so a fired slot's job still
// exists whenever that slot could be considered again: a trigger whose last
// slot is not recorded (after the migration that began recording them)
// finds the slots of the catch-up window it fired already taken by their
// unique key.
//
// A cron run calls Driver.Run on the active version with the event
// {"trigger", "schedule", "scheduled_at"}; its outcome is logged at info with
// the trigger's name and recorded in the invocation log (trigger kind cron).
// Its attempts follow the job runs' rules (attempt.go): each leaves one row,
// and one interrupted by a shutdown or a crash of its server runs again only
// when the function is retry_safe.

// CronTickArgs asks for due cron slots to be enqueued; the leader inserts one every CronInterval.
type CronTickArgs struct{}

// Kind implements river.JobArgs.
func (CronTickArgs) Kind() string { return "cron_tick" }

// InsertOpts implements river.JobArgsWithInsertOpts: a tick is cheap and the
// next one comes soon, so a failed tick is not retried.
func (CronTickArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: outbox.QueueDefault, MaxAttempts: 1}
}

// CronRunArgs asks for slot Slot of a cron trigger to be fired. Unique by all
// three fields in every job state: a slot runs once, whoever enqueues it.
type CronRunArgs struct {
	Namespace string    `json:"namespace" river:"unique"`
	Trigger   string    `json:"trigger" river:"unique"`
	Slot      time.Time `json:"slot" river:"unique"`
}

// Kind implements river.JobArgs.
func (CronRunArgs) Kind() string { return "cron_run" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (CronRunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: outbox.QueueRuns, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: everyState}}
}

var everyState = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateCancelled, rivertype.JobStateCompleted,
	rivertype.JobStateDiscarded, rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateRunning,
	rivertype.JobStateScheduled}

// cronTickJob is the leader's periodic job. Ticks are not unique: an extra
// one around a leader change finds the same slots, already enqueued.
func cronTickJob(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval), func() (river.JobArgs, *river.InsertOpts) {
		return CronTickArgs{}, nil
	}, &river.PeriodicJobOpts{ID: "sless_cron_tick", RunOnStart: true})
}

// dueSlot returns the latest slot of s in (since, now] and how many earlier
// ones in that range it skips; the zero time when none is due.
func dueSlot(s domain.Schedule, since, now time.Time) (slot time.Time, skipped int) {
	for t := s.Next(since); !t.IsZero() && !t.After(now); t = s.Next(t) {
		if !slot.IsZero() {
			skipped++
		}
		slot = t
	}
	return slot, skipped
}

// cronTickWorker enqueues the due slots, see the comment at the top of cron.go.
type cronTickWorker struct {
	river.WorkerDefaults[CronTickArgs]
	w *Workers
}

// Work enqueues a cron_run job for each due slot.
func (c *cronTickWorker) Work(ctx context.Context, job *river.Job[CronTickArgs]) error {
	w := c.w
	now := w.now()
	triggers, err := w.store.ListFiringCronTriggers(ctx)
	if err != nil || len(triggers) == 0 {
		return err
	}
	var runs []river.JobArgs
	var fired []store.FiredSlot
	for _, t := range triggers {
		sched, err := domain.ParseCron(t.Schedule)
		if err != nil { // validated on create; an old bad one must not stop the others
			w.log.WarnContext(ctx, "cron trigger has a bad schedule", "namespace", t.Namespace, "trigger", t.Name, "error", err)
			continue
		}
		since := latest(t.ActiveSince, t.LastFired, now.Add(-w.cfg.CronCatchUp))
		slot, skipped := dueSlot(sched, since, now)
		if slot.IsZero() {
			continue
		}
		if skipped > 0 {
			w.log.InfoContext(ctx, "cron: missed slots run once", "namespace", t.Namespace, "trigger", t.Name,
				"slot", slot, "skipped", skipped)
		}
		runs = append(runs, CronRunArgs{Namespace: t.Namespace, Trigger: t.Name, Slot: slot})
		fired = append(fired, store.FiredSlot{Namespace: t.Namespace, Trigger: t.Name, Slot: slot})
	}
	return w.store.InTx(ctx, func(tx pgx.Tx) error {
		params := make([]river.InsertManyParams, len(runs))
		for i, r := range runs {
			params[i] = river.InsertManyParams{Args: r}
		}
		if _, err := w.store.InsertJobsTx(ctx, tx, params); err != nil {
			return err
		}
		if err := w.store.RecordFiredSlotsTx(ctx, tx, fired); err != nil {
			return err
		}
		return completeTx(ctx, tx, job)
	})
}

func latest(ts ...time.Time) time.Time {
	var m time.Time
	for _, t := range ts {
		if t.After(m) {
			m = t
		}
	}
	return m
}

// cronRunWorker fires one slot of a cron trigger through Driver.Run.
type cronRunWorker struct {
	river.WorkerDefaults[CronRunArgs]
	w *Workers
}

// Timeout is the longest function timeout plus a margin, as for job runs.
func (c *cronRunWorker) Timeout(*river.Job[CronRunArgs]) time.Duration { return maxRunTimeout }

// Work runs the slot unless the trigger stopped firing since it was
// enqueued. Its attempts follow the rules of attempt.go, as a job run's do.
func (c *cronRunWorker) Work(ctx context.Context, job *river.Job[CronRunArgs]) error {
	w, a := c.w, job.Args
	st, err := w.cronState(ctx, a.Namespace, a.Trigger)
	if err != nil {
		return err
	}
	event, _ := json.Marshal(map[string]string{"trigger": a.Trigger, "schedule": st.schedule, "scheduled_at": a.Slot.UTC().Format(time.RFC3339)})
	spec := driver.RunSpec{Workload: st.workload, Name: fmt.Sprintf("%s-%d", a.Trigger, a.Slot.Unix()), RunID: a.Slot.Unix(), Event: event}
	attrs := []any{"namespace", a.Namespace, "trigger", a.Trigger, "slot", a.Slot}
	if rescued(job.JobRow) {
		// The attempt before died with its server, perhaps mid-run, and could
		// record nothing: this is its row.
		gone := ""
		if !st.active() {
			gone = "the trigger no longer fires"
		}
		dead, again := crashedAttempt(store.InvocationCron, st.workload.Config, gone)
		w.recordAttempt(ctx, store.InvocationCron, spec, spec.Name, dead, w.now(), again, attrs...)
		if !again {
			return nil
		}
	}
	if !st.active() {
		w.log.InfoContext(ctx, "cron run skipped: the trigger no longer fires", attrs...)
		return nil
	}
	started := w.now()
	out, err := w.runner.Run(ctx, spec)
	if why := w.interruption(ctx); why != "" {
		out, again := interruptedAttempt(store.InvocationCron, why, st.workload.Config, job.JobRow, out)
		w.recordAttempt(ctx, store.InvocationCron, spec, spec.Name, out, started, again, attrs...)
		if again {
			return fmt.Errorf("cron run %s/%s: %s: %w", a.Namespace, a.Trigger, why, ctx.Err())
		}
		return nil
	}
	if err != nil {
		var again bool
		if out, again = startFailed(job.JobRow, err); again {
			w.recordAttempt(ctx, store.InvocationCron, spec, spec.Name, out, started, again, attrs...)
			return fmt.Errorf("cron run %s/%s at %s: %w", a.Namespace, a.Trigger, a.Slot.Format(time.RFC3339), err)
		}
	}
	w.recordRun(store.InvocationCron, spec, spec.Name, out, started)
	w.log.InfoContext(ctx, "cron run finished", append(attrs, "function", st.workload.Function, "version", st.workload.Version,
		"ok", out.OK, "result", out.Result, "message", out.Message)...)
	return nil
}
