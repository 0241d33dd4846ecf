// Package command holds the use cases of sless: one exported method of
// Commands per command (create, update and delete a function, upload code,
// roll back, create, switch and delete a trigger, create, rerun and delete a
// job, ensure a namespace). It is the application layer: every caller that
// changes state — the REST handlers of httpapi, the console, the Terraform
// provider through the API, and the workers recording outcomes — calls these
// methods; none re-implements a use case.
//
// A command takes a context, the caller's store.Metadata (recorded on every
// event it appends) and a typed input, and returns the new state as a domain
// value or a *domain.Error. It owns its transaction (store.Execute, which
// decides again after a lost race): it takes the stream locks it needs,
// loads the aggregates, lets domain decide, appends the events, and inserts
// in the same transaction the River jobs the outbox package chooses for
// them (outbox.FunctionJobs, TriggerJobs, RunJobs). Reads that need no
// decision (listings, a function as the read model has it) stay queries on
// the store.
//
// The workers' outcomes are commands too, with a name ending in Tx: they
// take the caller's open *store.Tx instead (its metadata is what they
// record), because the worker completes its River job in that transaction,
// so that the outcome and the completion commit together — StartBuildTx and
// RecordBuildOutcomeTx (build.go), RecordRolloutTx and SetTriggerActiveTx
// (rollout.go), StartRunTx and RecordRunOutcomeTx (job.go). Those that name
// their object by a Ref load it in tx; those that take an aggregate take
// one the caller loaded in tx to decide that the outcome is still due, so
// a change committed since makes the append lose the race.
//
// Where things go:
//   - a new command is a method here, in the file of its aggregate, built on
//     change (load → decide → append → jobs); its rules belong in domain, the
//     jobs it causes in outbox/jobs.go, and its test here on real PostgreSQL;
//   - its HTTP route is a handler in httpapi that decodes, calls the method
//     and renders: status codes, headers and wire shapes are the handler's.
//
// command imports domain, store (and store/codestore for uploaded code),
// outbox (the job kinds) and runtimes (for the dependency steps of
// a function image); never Echo or net/http.
package command
