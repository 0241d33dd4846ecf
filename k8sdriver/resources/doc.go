// Package resources holds the pure builders of k8sdriver (Knative's
// layout: builders in resources/, client calls in the driver). Each turns a
// function version and the driver's Config into Kubernetes objects,
// deterministically (sorted env, stable labels,
// app.kubernetes.io/managed-by=sless), and none talks to the API server:
//
//	tenant.go      TenantObjects: Namespace with Pod Security "restricted",
//	               default-deny NetworkPolicy, ResourceQuota, LimitRange
//	kaniko.go      KanikoJob (the build Job in the build namespace), KanikoArgs
//	deployment.go  Deployment and Service (HTTP serving), RetirePatch (the
//	               pod Scale stops first)
//	runjob.go      RunJob and RunSecret (one run)
//	cronjob.go     CronJob (one cron trigger)
//	podspec.go     the function pod shared by the three above, EnvSecret
//	secrets.go     how namespace secrets reach the pods: ServerSecret,
//	               CronSecret, their names and cleanup selectors, owner
//	               references (JobOwner, CronJobOwner, ServiceOwner)
//	names.go       object names, labels, Port, HealthPath, ContainerName
//	config.go      Config, its defaults (WithDefaults) and Validate
//
// Config lives here because the builders read it; k8sdriver aliases it
// (k8sdriver.Config), so callers configure the driver without importing
// this package. LogSource is declared with it, as the type of Config.Logs;
// its implementation, k8sdriver.KubeletLogs, calls the API server and so
// stays in k8sdriver.
//
// Every builder's output for fixed inputs is compared with a golden file
// (testdata/<name>.json, TestGolden; go test -run TestGolden -update
// rewrites them after a deliberate change). A new Kubernetes object is a
// builder here with its golden file, and its apply in k8sdriver.
//
// What differs between runtimes (the entrypoint compiled into a Go image as
// a build argument, a read-only root) comes from runtimes.Describe, and the
// wrapper's variables are runtimes' Env* constants, never literals here.
//
// It may import domain, runtimes (descriptions and the SLESS_* names),
// workers (the port's types), Kubernetes' API types and client-go's apply
// configurations; never a clientset, and never k8sdriver.
package resources
