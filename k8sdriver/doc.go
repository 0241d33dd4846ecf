// Package k8sdriver runs functions on Kubernetes; it implements the
// workers.Driver and workers.Scheduler ports.
//
// Pure builders turn a function version into objects, deterministically
// (sorted env, stable labels, app.kubernetes.io/managed-by=sless):
// TenantObjects (Namespace with Pod Security "restricted", default-deny
// NetworkPolicy, ResourceQuota, LimitRange), KanikoJob (build Job in the
// build namespace), Deployment + Service + EnvSecret (HTTP serving), RunJob
// + EventSecret (one run) and CronJob (one cron trigger). A thin client-go
// layer (Driver) applies them with server-side apply (field manager "sless")
// using the caller's context, waits for Jobs and rollouts, and maps API
// errors to domain codes at this boundary (mapErr).
//
// Pods are always found by the driver's own labels (sless.dev/job,
// sless.dev/build, sless.dev/function, sless.dev/version), never by labels
// Kubernetes sets. Container output is read through LogSource, the one thing
// that needs a kubelet: KubeletLogs in production, a fake in tests, which run
// against a real kube-apiserver and controller manager (k8sdriver/testcluster)
// and write pod status as a kubelet would.
//
// Lifecycle of a run's Job: its event Secret applied (the user's event is
// never literal in a pod spec; the pod reads SLESS_EVENT from it) → Job
// created (ttl unset) → the Job made the Secret's owner → Complete | Failed
// (DeadlineExceeded = exit 124) → output read → ttlSecondsAfterFinished set
// → the TTL controller deletes the Job, and the garbage collector its pod
// and its Secret.
//
// What differs between runtimes (the entrypoint compiled into a Go image as a
// build argument, a read-only root) comes from runtimes.Describe, and the
// wrapper's variables are runtimes' Env* constants, never literals here.
//
// It may import domain, runtimes (descriptions and the SLESS_* names),
// workers (the port's types) and client-go.
package k8sdriver
