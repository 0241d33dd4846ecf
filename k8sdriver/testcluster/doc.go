// Package testcluster runs a real Kubernetes control plane on this machine for
// tests: etcd, kube-apiserver and kube-controller-manager as child processes on
// random loopback ports, with no kubelet, no scheduler and no container runtime.
// Controllers do their work (Jobs create Pods, Deployments create ReplicaSets
// and Pods, CronJobs create Jobs, EndpointSlices follow Services); a test moves
// Pods through their phases with Kubelet, which writes pod status as a kubelet
// would.
//
// The Kubernetes binaries come from the nested tools module
// (testcluster/tools, built by `go tool task k8s:binaries` into
// bin/k8s-<Version>/); etcd comes from PATH (Debian's etcd-server). A test
// package calls Main from TestMain and Get from each test; without the
// binaries the tests skip, except in CI (CI=true), where they fail.
//
// It may import client-go and the standard library.
package testcluster
