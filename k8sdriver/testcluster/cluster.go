package testcluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ControlPlaneUser is the user of Cluster.ControlPlaneConfig: it has no
// groups and no permissions until a test binds a role to it.
const ControlPlaneUser = "sless-control-plane"

// Cluster is a running etcd + kube-apiserver + kube-controller-manager +
// kube-scheduler, and one real node.
type Cluster struct {
	// Admin is a client config with system:masters rights.
	Admin *rest.Config
	// Client is a clientset for Admin.
	Client kubernetes.Interface
	// Started is how long Start took until the API server was ready and the
	// controller manager was running.
	Started time.Duration
	// Node is the cluster's node, where the pods run.
	Node *Node

	dir                       string
	bins                      Binaries
	cpToken                   string
	etcd, api, kcm, scheduler *proc

	firewallOnce sync.Once
	firewallErr  error
	firewall     *proc    // kube-router, once EnforceNetworkPolicy started it
	firewallHeld *os.File // the machine-wide lock while it runs
}

// Start runs a cluster from bins with its state in dir (which it does not
// remove). It returns once the API server answers /readyz, the default
// ServiceAccount of namespace default exists (the controller manager works)
// and the node is Ready with its images in the registry.
func Start(ctx context.Context, bins Binaries, dir string) (_ *Cluster, err error) {
	began := time.Now()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]
	c := &Cluster{dir: dir, bins: bins}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	c.etcd, err = startProc("etcd", dir, bins.Etcd,
		"--name=default", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--log-level=warn")
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, "etcd", func(ctx context.Context) error { return httpOK(ctx, http.DefaultClient, etcdURL+"/health", "") }, c.etcd); err != nil {
		return nil, err
	}

	adminToken, cpToken := randomHex(16), randomHex(16)
	c.cpToken = cpToken
	tokens := fmt.Sprintf("%s,admin,admin,system:masters\n%s,%s,%s\n", adminToken, cpToken, ControlPlaneUser, ControlPlaneUser)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return nil, err
	}
	saKey := filepath.Join(dir, "sa.key")
	saPub := filepath.Join(dir, "sa.pub")
	if err := writeKeyPair(saKey, saPub); err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "certs")
	c.api, err = startProc("kube-apiserver", dir, bins.APIServer,
		"--etcd-servers="+etcdURL,
		"--secure-port="+strconv.Itoa(apiPort), "--bind-address=127.0.0.1",
		// Loopback is refused as advertise address; with the endpoint
		// reconciler off, nothing tries to reach 10.0.0.1.
		"--advertise-address=10.0.0.1", "--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC", "--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+saPub, "--service-account-signing-key-file="+saKey,
		"--cert-dir="+certDir, "--allow-privileged=false",
		// The node's name resolves to loopback, where its kubelet listens.
		"--kubelet-preferred-address-types=Hostname",
		// A fake namespace's pods get its node selector (see FakeNodeLabel).
		"--enable-admission-plugins=PodNodeSelector", "--v=1")
	if err != nil {
		return nil, err
	}
	apiURL := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.Admin = &rest.Config{Host: apiURL, BearerToken: adminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 200, Burst: 400, WarningHandler: rest.NoWarnings{}}
	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: insecureTLS()}}
	if err := waitFor(ctx, "kube-apiserver /readyz", func(ctx context.Context) error {
		return httpOK(ctx, probe, apiURL+"/readyz", adminToken)
	}, c.etcd, c.api); err != nil {
		return nil, err
	}
	// The serving certificate exists once the server is ready: trust it from now on.
	if ca, err := os.ReadFile(filepath.Join(certDir, "apiserver.crt")); err == nil {
		c.Admin.TLSClientConfig = rest.TLSClientConfig{CAData: ca, ServerName: "kubernetes.default.svc"}
	}
	if c.Client, err = kubernetes.NewForConfig(c.Admin); err != nil {
		return nil, err
	}

	kubeconfig := filepath.Join(dir, "kcm.kubeconfig")
	if err := writeKubeconfig(kubeconfig, c.Admin); err != nil {
		return nil, err
	}
	c.kcm, err = startProc("kube-controller-manager", dir, bins.ControllerManager,
		"--kubeconfig="+kubeconfig, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
		"--service-account-private-key-file="+saKey, "--use-service-account-credentials=false",
		"--controllers=*,-nodeipam,-nodelifecycle,-persistentvolume-binder,-attachdetach,-persistentvolume-expander",
		"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10", "--concurrent-job-syncs=10",
		"--concurrent-gc-syncs=40", "--v=1")
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, "kube-controller-manager (default ServiceAccount)", func(ctx context.Context) error {
		_, err := c.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metaGet)
		return err
	}, c.etcd, c.api, c.kcm); err != nil {
		return nil, err
	}
	c.scheduler, err = startProc("kube-scheduler", dir, bins.Scheduler,
		"--kubeconfig="+kubeconfig, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false", "--v=1")
	if err != nil {
		return nil, err
	}
	if c.Node, err = startNode(ctx, c, bins, dir); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	c.Started = time.Since(began)
	return c, nil
}

// ControlPlaneConfig returns a client config authenticated as
// ControlPlaneUser, for tests of what a role allows.
func (c *Cluster) ControlPlaneConfig() *rest.Config {
	cfg := rest.CopyConfig(c.Admin)
	cfg.BearerToken = c.cpToken
	return cfg
}

// Stop ends the node (undoing what it changed on the machine), then the
// control plane's processes, controller manager first. It returns what
// could not be undone.
func (c *Cluster) Stop() error {
	err := c.stopFirewall()
	if c.Node != nil {
		err = errors.Join(err, c.Node.stop())
	}
	for _, p := range []*proc{c.scheduler, c.kcm, c.api, c.etcd} {
		if p != nil {
			p.stop(10 * time.Second)
		}
	}
	return err
}

// Logs returns the last lines of every process's log, for a failing test.
func (c *Cluster) Logs(lines int) string {
	var out string
	procs := []*proc{c.etcd, c.api, c.kcm, c.scheduler, c.firewall}
	if c.Node != nil {
		procs = append(procs, c.Node.procs()...)
	}
	for _, p := range procs {
		if p != nil {
			out += "--- " + p.name + "\n" + p.tail(lines) + "\n"
		}
	}
	return out
}

func httpOK(ctx context.Context, c *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeKeyPair writes the service account signing key and its public key.
func writeKeyPair(keyPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// Describe returns the pods of namespace ns with their containers' states
// and the namespace's events, and the end of the node's logs: what a
// failing test shows.
func (c *Cluster) Describe(ctx context.Context, ns string) string {
	var b strings.Builder
	if pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s: %s node=%q ip=%s\n", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.PodIP)
			for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
				fmt.Fprintf(&b, "  container %s: restarts=%d state=%+v last=%+v\n", cs.Name, cs.RestartCount, cs.State, cs.LastTerminationState)
			}
		}
	}
	if events, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "event %s %s: %s %s\n", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String() + c.Logs(15)
}
