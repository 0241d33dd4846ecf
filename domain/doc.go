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
// A new trigger type (say queue) starts here: its TriggerType constant, its
// place in TriggerTypes, and its spec rules in Trigger.Create. Every switch
// on the type then either handles it or fails loudly, and the tests that walk
// TriggerTypes show which: outbox.TriggerJobs (the job a change of such a
// trigger causes; a worker of its own in workers/ if it needs one) and the
// rollout's step for the function's triggers (workers/rollout.go), and its
// request, rendering and job through the API (httpapi's
// TestEveryTriggerTypeIsServed; trigger.go newTrigger, listing.go). Then
// its read-model queries if it routes requests or fires on its own
// (store/route.go, store/query.go), a flag of the CLI (cmd/sless/cli), and
// the Terraform provider's documentation (its validator takes TriggerTypes).
//
// A new command (a use case that appends events) is a method on this
// package's aggregate that returns events or an *Error, a case in its Apply,
// and its use case in command (see that package).
package domain
