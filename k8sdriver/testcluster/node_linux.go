package testcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// NodeName is the name of the node. The API server reaches its kubelet by
// this name (--kubelet-preferred-address-types=Hostname), which resolves to
// loopback everywhere: the kubelet listens there only, out of pods' reach.
const NodeName = "localhost"

// Node is a real Kubernetes node on this machine: containerd (Debian's, with
// runc and the CNI bridge plugin) and a kubelet registered with the
// cluster. Pods get addresses on a bridge of the node's own, with no route
// beyond it: they reach the bridge's address on this machine (where the
// registry serves, and where a test serves what pods may call) and each
// other, nothing else.
type Node struct {
	// BridgeIP is this machine's address on the pod network.
	BridgeIP string
	// Subnet is the pod network, e.g. "10.244.17.0/24".
	Subnet string
	// Registry holds the cluster's images (see PauseImage, KanikoImage,
	// RuntimeImage).
	Registry *Registry

	state               nodeState
	containerd, kubelet *proc
}

// startNode starts the node of cluster c with its state in dir.
func startNode(ctx context.Context, c *Cluster, bins Binaries, dir string) (_ *Node, err error) {
	if err := sweepStale(); err != nil {
		return nil, err
	}
	id := randomHex(3)
	n := &Node{state: nodeState{PID: os.Getpid(), Dir: dir, Bridge: "sless-tc-" + id, Cgroup: "/sless-tc-" + id}}
	if err := n.state.write(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			n.stop()
		}
	}()
	if err := n.makeBridge(); err != nil {
		return nil, err
	}
	if n.Registry, err = startRegistry(n.BridgeIP); err != nil {
		return nil, err
	}
	pushed := make(chan error, 1)
	go func() { pushed <- n.pushImages(ctx, bins) }()
	if err := n.startContainerd(bins, dir); err != nil {
		return nil, err
	}
	// kubelet gives up at once on a runtime it cannot reach.
	if err := waitFor(ctx, "containerd's socket", func(context.Context) error {
		conn, err := net.Dial("unix", n.containerdSocket())
		if err == nil {
			conn.Close()
		}
		return err
	}, n.containerd); err != nil {
		return nil, err
	}
	if err := makeCgroup(n.state.Cgroup); err != nil {
		return nil, err
	}
	if err := machine.hold(n.state.user()); err != nil {
		return nil, err
	}
	if err := n.startKubelet(c.Admin, bins, dir); err != nil {
		return nil, err
	}
	if err := n.waitReady(ctx, c.Client); err != nil {
		return nil, err
	}
	if err := <-pushed; err != nil {
		return nil, err
	}
	return n, nil
}

// makeBridge creates the pod network's bridge on a free 10.244.x.0/24 and
// gives this machine its .1.
func (n *Node) makeBridge() error {
	used := map[int]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip4 := ipn.IP.To4(); ip4 != nil && ip4[0] == 10 && ip4[1] == 244 {
				used[int(ip4[2])] = true
			}
		}
	}
	third := -1
	for _, i := range rand.Perm(250) {
		if !used[i+1] {
			third = i + 1
			break
		}
	}
	if third < 0 {
		return errors.New("no free 10.244.x.0/24 for the pod network")
	}
	n.Subnet = fmt.Sprintf("10.244.%d.0/24", third)
	n.BridgeIP = fmt.Sprintf("10.244.%d.1", third)
	for _, args := range [][]string{
		{"link", "add", "name", n.state.Bridge, "type", "bridge"},
		{"addr", "add", n.BridgeIP + "/24", "dev", n.state.Bridge},
		{"link", "set", n.state.Bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// pushImages builds the pause, kaniko and runtime base images and pushes
// them to the registry.
func (n *Node) pushImages(ctx context.Context, bins Binaries) error {
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	type job struct {
		ref   string
		build func() (v1.Image, error)
	}
	jobs := []job{
		{PauseImage, func() (v1.Image, error) { return pauseImage(bins) }},
		{KanikoImage, func() (v1.Image, error) { return kanikoImage(bins) }},
	}
	for _, rt := range Runtimes {
		jobs = append(jobs, job{"docker.io/" + RuntimeImage(rt), func() (v1.Image, error) { return runtimeImage(repo, rt) }})
	}
	var wg sync.WaitGroup
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		wg.Go(func() {
			img, err := j.build()
			if err == nil {
				err = n.Registry.Push(ctx, j.ref, img)
			}
			if err != nil {
				errs[i] = fmt.Errorf("image %s: %w", j.ref, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// mirrored are the registries whose images the node's registry stands in for.
var mirrored = []string{"docker.io", "registry.k8s.io", "gcr.io", "ghcr.io"}

// startContainerd writes containerd's configuration (its own root, state
// and socket below dir; CRI with the pause image, runc, the bridge network
// and the registries of certs.d) and starts it.
func (n *Node) startContainerd(bins Binaries, dir string) error {
	cd := filepath.Join(dir, "containerd")
	cniConf := filepath.Join(dir, "cni")
	certs := filepath.Join(dir, "certs.d")
	for _, d := range []string{cd, cniConf} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	// Every registry an image of the cluster names, and the node's own
	// address, lead to the node's registry over plain HTTP and nowhere else.
	for _, host := range append(mirrored, n.Registry.Host) {
		hostDir := filepath.Join(certs, host)
		if err := os.MkdirAll(hostDir, 0o755); err != nil {
			return err
		}
		hosts := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+n.Registry.Host, "http://"+n.Registry.Host)
		if err := os.WriteFile(filepath.Join(hostDir, "hosts.toml"), []byte(hosts), 0o644); err != nil {
			return err
		}
	}
	// No route in the pods: they reach the bridge's subnet only.
	cni := fmt.Sprintf(`{"cniVersion": "0.4.0", "name": "sless-test", "plugins": [
  {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q, "gateway": %q}]]}}]}
`, n.state.Bridge, filepath.Join(dir, "cni-ipam"), n.Subnet, n.BridgeIP)
	if err := os.WriteFile(filepath.Join(cniConf, "10-sless-test.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	// restrict_oom_score_adj: root here may not lower a score (no
	// CAP_SYS_RESOURCE), and runc fails the container if it tries.
	config := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %[10]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]q
    conf_dir = %[8]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[9]q
`, filepath.Join(cd, "root"), filepath.Join(cd, "state"), n.containerdSocket(), filepath.Join(cd, "ttrpc.sock"),
		filepath.Join(cd, "opt"), PauseImage, bins.CNIDir, cniConf, certs, filepath.Join(cd, "runc"))
	path := filepath.Join(cd, "config.toml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return err
	}
	var err error
	n.containerd, err = startProc("containerd", dir, bins.Containerd, "--config", path)
	return err
}

func (n *Node) containerdSocket() string {
	return filepath.Join(n.state.Dir, "containerd", "containerd.sock")
}

// startKubelet writes the kubelet's configuration and starts it. Kubelet's
// API is on loopback, reached by the API server for logs; it trusts any
// caller there (this is a test node: no pod can reach loopback).
func (n *Node) startKubelet(admin *rest.Config, bins Binaries, dir string) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	kd := filepath.Join(dir, "kubelet")
	if err := os.MkdirAll(filepath.Join(kd, "pod-logs"), 0o755); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubelet.kubeconfig")
	if err := writeKubeconfig(kubeconfig, admin); err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzPort: 0
containerRuntimeEndpoint: unix://%s
cgroupDriver: cgroupfs
cgroupRoot: %s
cgroupsPerQOS: true
failSwapOn: false
failCgroupV1: false
protectKernelDefaults: false
podLogsDir: %s
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
imagePullCredentialsVerificationPolicy: NeverVerify
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
syncFrequency: 10s
fileCheckFrequency: 5s
nodeStatusUpdateFrequency: 5s
shutdownGracePeriod: 0s
maxPods: 60
makeIPTablesUtilChains: false
`, ports[0], n.containerdSocket(), n.state.Cgroup, filepath.Join(kd, "pod-logs"))
	path := filepath.Join(dir, "kubelet.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return err
	}
	n.kubelet, err = startProc("kubelet", dir, bins.Kubelet,
		"--config="+path, "--kubeconfig="+kubeconfig, "--root-dir="+kd,
		"--hostname-override="+NodeName, "--node-ip="+n.BridgeIP, "--v=1")
	return err
}

// waitReady waits for the node to report Ready, then lifts the not-ready
// taint kubelet registers with (the node lifecycle controller that would
// lift it is off: it would also evict from the nodes tests fake).
func (n *Node) waitReady(ctx context.Context, client kubernetes.Interface) error {
	if err := waitFor(ctx, "node "+NodeName+" Ready", func(ctx context.Context) error {
		node, err := client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errors.New("not ready")
	}, n.containerd, n.kubelet); err != nil {
		return err
	}
	return waitFor(ctx, "node "+NodeName+" untainted", func(ctx context.Context) error {
		node, err := client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(node.Spec.Taints) == 0 {
			return nil
		}
		node.Spec.Taints = nil
		_, err = client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		if err == nil {
			err = errors.New("taint removed, checking")
		}
		return err
	})
}

// stop ends the kubelet, containerd and every container, and undoes what
// the node changed on the machine.
func (n *Node) stop() error {
	for _, p := range []*proc{n.kubelet, n.containerd} {
		if p != nil {
			p.stop(5 * time.Second)
		}
	}
	if n.Registry != nil {
		n.Registry.close()
	}
	return n.state.undo()
}

// procs returns the node's processes, for Cluster.Logs.
func (n *Node) procs() []*proc {
	var ps []*proc
	for _, p := range []*proc{n.containerd, n.kubelet} {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}
