package outbox

import (
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/slessio/sless/domain"
)

// Queues, sized in the River client: builds are slow and few, the rest many and short.
const (
	QueueBuilds   = "builds"
	QueueRollouts = "rollouts"
	QueueRuns     = "runs"
	QueueAsync    = "async"
	QueueDefault  = river.QueueDefault
)

// BuildArgs asks for version Version of a function to be built. Unique by
// args: one build per version, however often it is enqueued. Incarnation is
// the function's (domain.Function.Incarnation): a function deleted and
// created again numbers its versions from 1 again, and its builds must not
// be taken for the completed builds of the one before.
type BuildArgs struct {
	Namespace   string `json:"namespace" river:"unique"`
	Function    string `json:"function" river:"unique"`
	Version     int    `json:"version" river:"unique"`
	Incarnation int    `json:"incarnation,omitempty" river:"unique"`
}

// Kind implements river.JobArgs.
func (BuildArgs) Kind() string { return "build" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (BuildArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueBuilds, MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// RolloutArgs asks for a function's workload to be converged to its desired
// state (active version, enabled http triggers) as the read model has it now.
// Level-triggered: it carries no version, so the order of rollouts does not matter.
type RolloutArgs struct {
	Namespace string `json:"namespace" river:"unique"`
	Function  string `json:"function" river:"unique"`
}

// Kind implements river.JobArgs.
func (RolloutArgs) Kind() string { return "rollout" }

// InsertOpts implements river.JobArgsWithInsertOpts. Unique until it finishes
// (River requires the running state in the set): an insert during a running
// rollout is skipped, so the worker re-reads the desired state after
// converging and goes again until nothing changed meanwhile.
func (RolloutArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueRollouts, MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: untilFinished}}
}

// untilFinished makes a job unique while it waits or runs, but not once completed.
var untilFinished = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateScheduled, rivertype.JobStateRetryable, rivertype.JobStateRunning}

// ScheduleArgs asks for a cron trigger's schedule to be applied or removed, as
// the read model has it now (level-triggered).
type ScheduleArgs struct {
	Namespace string `json:"namespace" river:"unique"`
	Trigger   string `json:"trigger" river:"unique"`
}

// Kind implements river.JobArgs.
func (ScheduleArgs) Kind() string { return "schedule" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (ScheduleArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueRollouts, MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: untilFinished}}
}

// RunJobArgs asks for run RunID of a one-shot job. Unique by args: one
// execution per run of one incarnation of the job (domain.Job.Incarnation;
// a re-created job counts its runs from 1 again).
type RunJobArgs struct {
	Namespace   string `json:"namespace" river:"unique"`
	Job         string `json:"job" river:"unique"`
	RunID       int64  `json:"run_id" river:"unique"`
	Incarnation int    `json:"incarnation,omitempty" river:"unique"`
}

// Kind implements river.JobArgs.
func (RunJobArgs) Kind() string { return "run_job" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (RunJobArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueRuns, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// CleanupArgs asks for every workload, schedule and stored artifact of a
// deleted function to be removed. Incarnation is the deleted function's
// (domain.Function.Incarnation): only that incarnation's stored code is
// deleted, never the code of the function created again under the name
// since. 0 is a job queued before cleanups named incarnations (see
// cleanupWorker).
type CleanupArgs struct {
	Namespace   string `json:"namespace"`
	Function    string `json:"function"`
	Incarnation int    `json:"incarnation,omitempty"`
}

// Kind implements river.JobArgs.
func (CleanupArgs) Kind() string { return "cleanup" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (CleanupArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueRollouts, MaxAttempts: 10}
}

// DeliverArgs asks for an attempt of asynchronous invocation ID (a row of
// async_invocations). Not unique: the row is the state, and a worker that
// finds it finished does nothing. River's own attempts are not the
// invocation's (snoozes and rescues do not count; the row counts them), so
// MaxAttempts only bounds a job that keeps failing to record anything.
type DeliverArgs struct {
	Namespace string `json:"namespace"`
	Function  string `json:"function"`
	ID        string `json:"id"`
	// AgeFrom is when the invocation's age counts from (its enqueue, or its
	// retry from the dead letters): one past its age is given up without
	// waiting for a delivery slot.
	AgeFrom time.Time `json:"age_from"`
}

// Kind implements river.JobArgs.
func (DeliverArgs) Kind() string { return "async_deliver" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (DeliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueAsync, MaxAttempts: 25}
}

// CallbackArgs asks for the final response of asynchronous invocation ID
// to be POSTed to its callback URL.
type CallbackArgs struct {
	ID string `json:"id"`
}

// Kind implements river.JobArgs.
func (CallbackArgs) Kind() string { return "async_callback" }

// InsertOpts implements river.JobArgsWithInsertOpts: a few tries, then the
// invocation records the callback as failed.
func (CallbackArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueDefault, MaxAttempts: 4, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// SameIncarnation reports whether a job queued for incarnation queued is for
// the current one; 0 is a job queued before jobs named incarnations.
func SameIncarnation(queued, current int) bool { return queued == 0 || queued == current }

func Job(args river.JobArgs) river.InsertManyParams { return river.InsertManyParams{Args: args} }

// FunctionJobs returns the jobs that the events just appended to function f
// (already folded into f) cause: a build for each new version that needs one,
// a rollout when what should run may have changed, a cleanup after a delete.
func FunctionJobs(f *domain.Function, events []domain.Event) []river.InsertManyParams {
	var jobs []river.InsertManyParams
	rollout := false
	for _, ev := range events {
		switch e := ev.(type) {
		case domain.VersionCreated:
			if f.NeedsBuild(e.Version) {
				jobs = append(jobs, Job(BuildArgs{Namespace: f.Namespace, Function: f.Name, Version: e.Version, Incarnation: f.Incarnation}))
			}
		case domain.VersionActivated, domain.FunctionConfigUpdated:
			rollout = true
		case domain.FunctionDeleted:
			// A delete keeps the incarnation it ends (domain.Function.Apply).
			return append(jobs, Job(CleanupArgs{Namespace: f.Namespace, Function: f.Name, Incarnation: f.Incarnation}))
		}
	}
	if rollout && f.Exists {
		jobs = append(jobs, Job(RolloutArgs{Namespace: f.Namespace, Function: f.Name}))
	}
	return jobs
}

// TriggerJobs returns the jobs that the events just appended to trigger t
// cause: a change of the trigger (created, enabled, disabled, deleted)
// queues the job that serves it (TriggerJob). t must be the state before a
// delete folds in (Type and Function still set), so callers fold after
// calling, or pass a copy.
func TriggerJobs(t domain.Trigger, events []domain.Event) []river.InsertManyParams {
	changed := false
	for _, ev := range events {
		switch ev.(type) {
		case domain.TriggerCreated, domain.TriggerEnabled, domain.TriggerDisabled, domain.TriggerDeleted:
			changed = true
		}
	}
	if !changed {
		return nil
	}
	for _, ev := range events {
		if c, ok := ev.(domain.TriggerCreated); ok { // t may be the state before it
			t.Type, t.Function = c.Type, c.Function
		}
	}
	return []river.InsertManyParams{TriggerJob(t)}
}

// triggerJobs is the outbox's half of the trigger type table (domain's
// TriggerTypeInfo is the other): for each type, the job that serves a
// trigger of it. A change of the trigger queues it (TriggerJobs); for a
// type its function's workload does not serve, so does every rollout of
// the function, so that the job follows the active version
// (command.RecordRolloutTx). A type the workload serves is served by the
// rollout of its function.
var triggerJobs = map[domain.TriggerType]func(t domain.Trigger) river.JobArgs{
	domain.TriggerHTTP: func(t domain.Trigger) river.JobArgs { return RolloutArgs{Namespace: t.Namespace, Function: t.Function} },
	domain.TriggerCron: func(t domain.Trigger) river.JobArgs { return ScheduleArgs{Namespace: t.Namespace, Trigger: t.Name} },
}

// TriggerJob returns the job that serves trigger t, by its type
// (triggerJobs). It panics for a type that has no job: the tests walk
// domain.TriggerTypes, so a type added without its job fails them.
func TriggerJob(t domain.Trigger) river.InsertManyParams {
	job, ok := triggerJobs[t.Type]
	if !ok {
		panic(fmt.Sprintf("outbox.TriggerJob: trigger type %q has no job: add it to triggerJobs", t.Type))
	}
	return Job(job(t))
}

// RunJobs returns a run for every run requested by events, about to be
// appended to job j (j is the state before them: a create in events starts
// a new incarnation).
func RunJobs(j *domain.Job, events []domain.Event) []river.InsertManyParams {
	var jobs []river.InsertManyParams
	next := *j
	for _, ev := range events {
		next.Apply(ev)
		if e, ok := ev.(domain.JobRunRequested); ok {
			jobs = append(jobs, Job(RunJobArgs{Namespace: j.Namespace, Job: j.Name, RunID: e.RunID, Incarnation: next.Incarnation}))
		}
	}
	return jobs
}
