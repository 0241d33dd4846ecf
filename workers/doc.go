// Package workers owns the River side of sless: one worker per job kind that
// the outbox enqueues (package outbox: build a version, roll out a function,
// apply schedules, run a job, clean up after deletes) and the River client
// setup. The workers act through the driver.Driver port (implemented by
// k8sdriver and localdriver) and record outcomes through command.
//
// It may import domain, driver, outbox, command, store (and store/codestore
// for the code keys of a function), tracing and River. Workers are idempotent: River delivers at least once,
// so each worker finds its outcome event already appended and does nothing
// twice.
//
// Every worker follows one shape: decide on the events (domain commands say
// "nothing" when the outcome is recorded), call the driver outside any
// transaction, then record the outcome through command (its Tx methods
// append the events and insert the follow-up jobs the outbox selectors pick)
// and complete the River job in the same transaction (store.Execute plus
// river.JobCompleteTx). A stop or crash mid-call leaves the job to be worked
// again; a rerun after the outcome committed completes at once.
//
//	build     (queue builds)   a slot of the namespace (else snooze, slots.go) → NeedsBuild? → BuildStarted →
//	                           stored code checked against the version (code.go) → Driver.Build of the checked bytes →
//	                           BuildSucceeded (+VersionActivated → rollout) | BuildFailed (also for code changed in the store);
//	                           a driver error (full disk) is shown on the version and retried after 1, 2, 4, 8 s, then BuildFailed
//	rollout   (queue rollouts) desired state → Driver.Deploy → RolloutCompleted | RolloutFailed, http triggers' active, cron triggers' schedule jobs
//	schedule  (queue rollouts) Scheduler.ApplySchedule | RemoveSchedule (if the driver has one) → the cron trigger's active
//	run_job   (queue runs)     current run? → JobStarted → Driver.Run → JobSucceeded | JobFailed
//	cleanup   (queue rollouts) Driver.Remove (unless created again), delete the deleted incarnation's stored code
//	cron_tick (queue default)  leader-only, every CronInterval: a cron_run per due slot (see cron.go)
//	cron_run  (queue runs)     Driver.Run of one slot; the outcome is logged
//
// Rollouts and schedules are level-triggered and unique while unfinished: a
// change during a running one is skipped as a duplicate, so they complete the
// job first in their outcome transaction and re-read the desired state after
// it, converging again when it changed (rollout.go explains why that order
// closes the race).
//
// Every attempt of a job is a span "river.<kind>" (trace.go), the child of
// the trace context its metadata carries: the request whose command queued
// it, or the job whose outcome did. Builds are measured by runtime and
// outcome (buildmetrics.go: sless_build_duration_seconds, sless_builds_total).
package workers
