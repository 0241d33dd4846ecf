// Package drivertest is the conformance suite of the driver.Driver port: one
// set of cases that every driver (localdriver, k8sdriver) must pass, run from
// the driver's own tests with Run and a Harness.
//
// The suite generates its sample functions in code (Python, Node.js and Go;
// a Go compile error; a Node.js dependency installed from a file: path in the
// zip, so no registry is needed; a process that crashes on request; one that
// crash-loops; one that fails to load; jobs that print and return, fail,
// sleep past their timeout or busy-loop; one that reads its secrets),
// uploads them through the harness's code store exactly as the API does
// (ValidateZip, then Put), and drives the driver through builds, deploys,
// version switches under load, crash loops, scale to zero, jobs, secrets
// and removal, each case in its own namespace and in parallel.
//
// The Secrets case hands the driver (driver.SecretOpenerUser) an in-memory
// fake of the platform's vault, which it keeps for the driver's life.
//
// Both drivers run the suite for real: the local driver on this machine's
// interpreters, the Kubernetes driver on the test cluster's real node
// (kaniko builds, pods, pod logs).
//
// It may import domain, driver, runtimes and store/codestore (to store its samples as the API does).
package drivertest
