// Package k8sdriver runs functions on Kubernetes; it implements the
// driver.Driver and driver.Scheduler ports.
//
// Layout: the builders are in resources/, the client calls here. The package
// resources turns a function version into Kubernetes objects with pure
// functions (TenantObjects, KanikoJob, Deployment + Service + EnvSecret +
// ServerSecret, RunJob + RunSecret, CronJob + CronSecret), and holds the
// names and labels of those objects and the driver's Config with its
// defaults (Config and the types it needs are aliased here, so New's callers
// never import resources). This package is the thin client-go layer
// (Driver): it applies what resources builds with server-side apply (field
// manager "sless") using the caller's context, gets, lists, watches and
// deletes, waits for Jobs and rollouts, reads logs, and maps API errors to
// domain codes at this boundary (mapErr). A file here calls the API server;
// a file in resources never does.
//
// A new Kubernetes object is a builder in resources with a golden test
// (resources/testdata/<name>.json, TestGolden), and its apply in this
// package, in the Driver method that needs it.
//
// Pods are always found by the driver's own labels (sless.dev/job,
// sless.dev/build, sless.dev/function, sless.dev/version), never by labels
// Kubernetes sets. Container output is read through LogSource (KubeletLogs:
// the pods/log subresource). The tests run against k8sdriver/testcluster, a
// real one-node cluster: the conformance suite, the CronJob runs and the
// control plane's own Deployment run on its node; tests that need an outcome
// on cue use its FakeKubeletForTest and a fake LogSource.
//
// The runs of a cron trigger's CronJob are not the driver's calls:
// Watch reports each finished one once (claimed by a label on its
// Job), for the invocation log.
//
// Namespace secrets (driver.SecretOpenerUser): the driver opens the ones a
// version uses whenever it starts something of it (Scale with replicas,
// Run, ApplySchedule of an enabled trigger) and applies them as an
// immutable Secret that the pods read by reference (secretKeyRef, a
// read-only secret volume at /run/secrets), never as values in a spec:
//
//	server pods  <function>-v<version>-secrets-<hash>, owned by the
//	             function's Service; Scale deletes the other versions' once
//	             its wait is over
//	a run        the run's Secret (its event beside them), owned by its Job
//	a cron run   <cronjob>-v<version>-secrets-<hash>, owned by the CronJob;
//	             ApplySchedule deletes the trigger's other versions'
//
// Remove deletes them all with the function's other objects.
//
// Lifecycle of a run's Job: its Secret applied (the user's event is
// never literal in a pod spec; the pod reads SLESS_EVENT from it) → Job
// created (ttl unset) → the Job made the Secret's owner → Complete | Failed
// (DeadlineExceeded = exit 124) → output read → ttlSecondsAfterFinished set
// → the TTL controller deletes the Job, and the garbage collector its pod
// and its Secret.
//
// What differs between runtimes (the entrypoint compiled into a Go image as a
// build argument, a read-only root) comes from runtimes.Describe, and the
// wrapper's variables are runtimes' Env* constants, never literals: both are
// read by the builders in resources.
//
// It may import domain, driver (the port), runtimes, k8sdriver/resources and
// client-go: never store, workers, pgx or River.
package k8sdriver
