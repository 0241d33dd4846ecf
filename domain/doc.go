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
//	                                  └──build failed──► Failed (the active version, if any, keeps running)
//	Version:   Queued ──► Building ──► Succeeded | Failed (immutable once done)
//	Job run:   Pending ──► Running ──► Succeeded | Failed (raising run_id starts a new run)
//	Trigger:   enabled (user's wish) and active (driver's report) are separate facts.
//
// Stream ids are "<kind>:<namespace>/<name>" (FunctionStream, TriggerStream, JobStream).
package domain
