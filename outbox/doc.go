// Package outbox is the River side of the transactional outbox that the
// command layer and the workers share: the job kinds (BuildArgs, RolloutArgs,
// ScheduleArgs, RunJobArgs, CleanupArgs and their queues) and the selectors
// that choose, from events just appended, the jobs they cause (FunctionJobs,
// TriggerJobs, RunJobs), inserted in the same transaction as the events.
// CancelRunTx cancels the queued runs of a job inside a caller's transaction.
//
// It sits below command and workers, so that both can use it: it may import
// domain and River only.
package outbox
