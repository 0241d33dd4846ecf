// Package testcluster runs a real one-node Kubernetes cluster on this
// machine for tests: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler as child processes on random loopback ports, and a node —
// Debian's containerd (with runc and the CNI bridge plugin) and kubelet —
// whose pods sit on a bridge of their own with no route beyond it. Images
// come from an OCI registry in the test process (Registry), which holds the
// pause image, kaniko's image and the runtimes' base images, built from
// this machine's programs under the names a real cluster uses (images.go).
// Everything the node changes on the machine is undone when it stops, and at
// the next start for a run that never stopped (host_linux.go).
//
// For outcomes on cue, FakeKubeletForTest writes pod status for the pods of
// fake namespaces, which the scheduler keeps off the real node.
//
// The Kubernetes programs and kaniko come from the nested modules tools and
// kaniko, built by `go tool task k8s:binaries` into bin/k8s-<Version>/;
// etcd, containerd, runc and the CNI plugins from Debian (`go tool task
// deps`). A test package calls Main (or Wrap) from TestMain and Get from each
// test; without the programs the tests skip, except in CI (CI=true), where
// they fail. It needs root.
//
// It may import client-go, go-containerregistry, internal/mountinfo and the
// standard library.
package testcluster
