// Package k8sdriver runs functions on Kubernetes: pure builders that turn a
// function version into objects (tenant Namespace, kaniko build Job,
// Deployment + Service, CronJob, Job) and a thin client-go layer that applies
// them with the caller's context. It implements the workers.Driver port.
//
// It may import domain and client-go.
package k8sdriver
