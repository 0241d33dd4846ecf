// Package workers owns the River side of sless: the job kinds the outbox
// enqueues (build a version, roll out a function, apply schedules, run a job,
// clean up after deletes), one worker per kind, the River client setup, and
// the small Driver port those workers need (implemented by k8sdriver and
// localdriver, checked by one conformance suite).
//
// It may import domain, store and River. Workers are idempotent: River
// delivers at least once, so each worker finds its outcome event already
// appended and does nothing twice.
package workers
