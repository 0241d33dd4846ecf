package workers

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/invoke"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// Recorder takes invocation records without blocking (the proxy's, or the
// store's InvocationWriter); job and cron runs are invocations too.
type Recorder = invoke.Recorder

// Statuses of run attempts that did not finish, in the invocation log's
// HTTP status: see invoke.StatusInterrupted and invoke.StatusCancelled.
const (
	StatusInterrupted = invoke.StatusInterrupted
	StatusCancelled   = invoke.StatusCancelled
)

// DefaultInvocationRetention is how long the invocation log keeps a day.
const DefaultInvocationRetention = store.DefaultInvocationRetention

// recordRun records a job or cron run that just finished in the invocation log.
func (w *Workers) recordRun(kind store.TriggerKind, spec driver.RunSpec, path string, out invoke.RunOutcome, started time.Time) {
	w.recordRunAt(kind, spec, path, out, started, w.now())
}

// RecordCronRun records a finished run of a Scheduler driver's schedule in
// the invocation log (trigger kind cron), as a cron run of the workers' own
// is recorded.
func (w *Workers) RecordCronRun(r driver.CronRun) {
	spec := driver.RunSpec{Workload: driver.Workload{Namespace: r.Namespace, Function: r.Function, Version: r.Version,
		Config: domain.FunctionConfig{TimeoutSec: r.TimeoutSec}}, Name: r.Name}
	out := invoke.OutcomeOf(r.Result, r.TimeoutSec)
	w.recordRunAt(store.InvocationCron, spec, r.Name, out, r.Started, r.Ended)
	w.log.Info("cron run finished", "namespace", r.Namespace, "trigger", r.Trigger, "function", r.Function,
		"version", r.Version, "ok", out.OK, "result", out.Result, "message", out.Message)
}

func (w *Workers) recordRunAt(kind store.TriggerKind, spec driver.RunSpec, path string, out invoke.RunOutcome, started, ended time.Time) {
	if !w.runner.Record(kind, spec, path, out, started, ended) {
		w.log.Warn("invocation record dropped: the log buffer is full", "namespace", spec.Namespace, "function", spec.Function, "path", path)
	}
}

// InvocationPartitionsArgs asks for the invocation log's daily partitions to
// be created ahead and the ones past the retention dropped (leader-only,
// hourly, and once at start).
type InvocationPartitionsArgs struct{}

// Kind implements river.JobArgs.
func (InvocationPartitionsArgs) Kind() string { return "invocation_partitions" }

// InsertOpts implements river.JobArgsWithInsertOpts: one per hour at most.
func (InvocationPartitionsArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: outbox.QueueDefault, MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByPeriod: time.Hour}}
}

func invocationPartitionsJob() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(time.Hour), func() (river.JobArgs, *river.InsertOpts) {
		return InvocationPartitionsArgs{}, nil
	}, &river.PeriodicJobOpts{ID: "invocation_partitions", RunOnStart: true})
}

// invocationPartitionsWorker keeps three days of partitions ahead and drops
// the days older than the retention; it also deletes the asynchronous
// invocations finished more than a day ago (dead letters stay).
type invocationPartitionsWorker struct {
	river.WorkerDefaults[InvocationPartitionsArgs]
	w *Workers
}

// Work creates and drops partitions; both are idempotent.
func (p *invocationPartitionsWorker) Work(ctx context.Context, _ *river.Job[InvocationPartitionsArgs]) error {
	now := p.w.now()
	if err := p.w.store.EnsureInvocationPartitions(ctx, now.Add(-24*time.Hour), now.Add(72*time.Hour)); err != nil {
		return err
	}
	dropped, err := p.w.store.DropInvocationPartitionsBefore(ctx, now.Add(-p.w.cfg.InvocationRetention))
	if err != nil {
		return err
	}
	if len(dropped) > 0 {
		p.w.log.InfoContext(ctx, "dropped old invocation log partitions", "partitions", dropped, "retention", p.w.cfg.InvocationRetention)
	}
	pruned, err := p.w.store.PruneAsync(ctx, now.Add(-asyncPruneAge))
	if pruned > 0 {
		p.w.log.InfoContext(ctx, "pruned finished asynchronous invocations", "count", pruned, "age", asyncPruneAge)
	}
	return err
}
