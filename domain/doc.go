// Package domain is the pure core of sless: the aggregates Function (with its
// Versions), Trigger, Job and Namespace; their typed events (one payload struct
// per event type, see events.go); folding events into state (Apply); commands
// that validate input and return new events or a coded *Error; and the
// validation rules of SPEC §2–4 (names, runtimes, entrypoints, limits, env
// vars, cron).
//
// It imports the standard library only. Nothing here reads a clock, a database
// or the network: callers pass `now` in, load the stream, call a command and
// append what it returns. Commands are idempotent where workers call them
// (at-least-once delivery): repeating an outcome that is already recorded
// returns no events.
//
// Lifecycles:
//
//	Function:  Pending ──upload──► Building ──built+activated──► Ready
//	                                  ├──build failed, a version active──► Ready (the failure is LastBuildFailure)
//	                                  └──build failed, none active──────► Failed
//	           (the phase says what serves: a failed rollout of the active version makes it Failed)
//	Version:   Queued ──► Building ──► Succeeded | Failed (immutable once done)
//	Job run:   Pending ──► Running ──► Succeeded | Failed (raising run_id starts a new run)
//	Trigger:   enabled (user's wish) and active (driver's report) are separate facts.
//
// Stream ids are "<kind>:<namespace>/<name>" (FunctionStream, TriggerStream, JobStream).
//
// # Adding a trigger type
//
// A new trigger type (say queue) is a row in two tables and a worker:
//
//   - here, its TriggerType constant and its row in triggerTypes
//     (trigger.go, TriggerTypeInfo): Validate, the rules of its spec (a
//     field of TriggerSpec and TriggerCreated if it needs one); Label, how
//     people are told of it; Workload, whether the function's workload
//     serves it (as http) or a job of its own (as cron's schedule); and
//     Scheduled, whether it fires by a schedule. What does something per
//     type reads the row: Trigger.Create, the rollout (the replicas it asks
//     for, and command.RecordRolloutTx: a workload trigger's active flag,
//     or the job of any other again), the API's rendering (httpapi
//     trigger.go), the listing, the console and the CLI;
//   - in outbox, the job that serves it (triggerJobs in jobs.go): a change
//     of the trigger queues it, and so does every rollout of its function
//     for a type the workload does not serve;
//   - in workers, that job's worker, unless the rollout is its job.
//
// The tests that walk TriggerTypes fail until those are there: domain's
// TestTriggerTypeTable, outbox's TestTriggerJobsCoverEveryType (which names
// each type's job) and TestTriggerJobFollowsTheTypeTable, and httpapi's
// TestEveryTriggerTypeIsServed (its request through the API). A few places
// name a type on purpose and take a new one only if it works like it: the
// invoke proxy's routes are http's (store/route.go, the route notification
// in store/projection.go), the schedule worker, the cron enqueuer and its
// query are cron's (workers/schedule.go and cron.go, store/query.go), the
// CLI has the shorthands --http and --cron (--type takes any type), and
// the invocation log's kinds share the two types' names
// (store/invocation.go). The Terraform provider's validator takes
// TriggerTypes; its documentation names the types.
//
// A new command (a use case that appends events) is a method on this
// package's aggregate that returns events or an *Error, a case in its Apply,
// and its use case in command (see that package).
package domain
