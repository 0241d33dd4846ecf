package testcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Version is the Kubernetes release the tools module builds; the binaries live
// in bin/k8s-<Version>/ below the repository root.
const Version = "v1.37.2"

// BinDirEnv overrides where the Kubernetes binaries are looked for.
const BinDirEnv = "SLESS_K8S_BIN_DIR"

// Binaries are the paths of the programs a cluster runs.
type Binaries struct {
	Etcd              string
	APIServer         string
	ControllerManager string
	Scheduler         string
	Kubelet           string
	// Kaniko is the kaniko executor and Pause the pod sandbox's program,
	// packed into images on start.
	Kaniko, Pause string
	// KubeRouter enforces NetworkPolicy on the node, for the tests that ask
	// (Cluster.EnforceNetworkPolicy).
	KubeRouter string
	// Containerd is Debian's containerd (it finds runc on PATH); CNIDir
	// holds the CNI plugins (Debian's containernetworking-plugins).
	Containerd string
	CNIDir     string
}

// FindBinaries locates etcd, containerd and runc on PATH, the CNI plugins
// in /usr/lib/cni, and the programs the Taskfile's k8s:binaries builds in
// $SLESS_K8S_BIN_DIR or bin/k8s-<Version>/ of the repository that holds the
// working directory. The error says what is missing and how to get it.
func FindBinaries() (Binaries, error) {
	var b Binaries
	var missing []string
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		missing = append(missing, "etcd (apt-get install etcd-server)")
	}
	b.Etcd = etcd
	if b.Containerd, err = exec.LookPath("containerd"); err != nil {
		missing = append(missing, "containerd (apt-get install containerd)")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		missing = append(missing, "runc (apt-get install runc)")
	}
	b.CNIDir = "/usr/lib/cni"
	if _, err := os.Stat(filepath.Join(b.CNIDir, "bridge")); err != nil {
		missing = append(missing, "the CNI plugins in /usr/lib/cni (apt-get install containernetworking-plugins)")
	}
	dir := os.Getenv(BinDirEnv)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return b, err
		}
		dir = filepath.Join(root, "bin", "k8s-"+Version)
	}
	b.APIServer = filepath.Join(dir, "kube-apiserver")
	b.ControllerManager = filepath.Join(dir, "kube-controller-manager")
	b.Scheduler = filepath.Join(dir, "kube-scheduler")
	b.Kubelet = filepath.Join(dir, "kubelet")
	b.Kaniko = filepath.Join(dir, "kaniko-executor")
	b.Pause = filepath.Join(dir, "pause")
	b.KubeRouter = filepath.Join(dir, "kube-router")
	if _, err := exec.LookPath("ipset"); err != nil {
		missing = append(missing, "ipset (apt-get install ipset), for kube-router")
	}
	for _, p := range []string{b.APIServer, b.ControllerManager, b.Scheduler, b.Kubelet, b.Kaniko, b.Pause, b.KubeRouter} {
		if info, err := os.Stat(p); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			missing = append(missing, p+" (go tool task k8s:binaries)")
		}
	}
	if len(missing) > 0 {
		return b, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	return b, nil
}

// repoRoot walks up from the working directory to the go.mod of the main module.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/slessio/sless\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of github.com/slessio/sless above the working directory")
		}
		dir = parent
	}
}
