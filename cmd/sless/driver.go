package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox"
	"github.com/slessio/sless/localdriver/sandbox/egress"
)

// runningDriver is a driver with what the platform needs to stop it.
type runningDriver struct {
	driver.Driver
	close func(ctx context.Context) error
	// sandbox is how function processes are isolated: bubblewrap, none
	// (local) or kubernetes.
	sandbox string
}

// ExitReason says why the process behind an endpoint ended, when the driver
// can say (the local driver; see proxy's exitReasoner).
func (d *runningDriver) ExitReason(ctx context.Context, endpoint string) string {
	if er, ok := d.Driver.(interface {
		ExitReason(ctx context.Context, endpoint string) string
	}); ok {
		return er.ExitReason(ctx, endpoint)
	}
	return ""
}

// OwnsEndpoint says whether endpoint is one this plane's driver serves (the
// local driver: its sockets; see proxy's endpointOwner); a driver that
// cannot say (Kubernetes: every plane's) owns them all.
func (d *runningDriver) OwnsEndpoint(endpoint string) bool {
	if o, ok := d.Driver.(interface{ OwnsEndpoint(endpoint string) bool }); ok {
		return o.OwnsEndpoint(endpoint)
	}
	return true
}

// UseBuildSource hands the driver where to find the code of a version it
// must build before running it (the local driver, whose builds are per data
// dir: see driver.BuildSourceUser); workers.New calls it.
func (d *runningDriver) UseBuildSource(s driver.BuildSource) {
	if u, ok := d.Driver.(driver.BuildSourceUser); ok {
		u.UseBuildSource(s)
	}
}

// UseSecrets hands the driver the opener of secret values (see
// driver.SecretOpenerUser).
func (d *runningDriver) UseSecrets(o driver.SecretOpener) {
	if u, ok := d.Driver.(driver.SecretOpenerUser); ok {
		u.UseSecrets(o)
	}
}

// openDriver returns the driver chosen by --driver, watching it with
// reports (crash loops, finished runs of its own schedules) until it closes.
func openDriver(ctx context.Context, c *config, dev bool, log *slog.Logger, reports driver.Reports) (*runningDriver, error) {
	d, err := newDriver(ctx, c, dev, log)
	if err != nil {
		return nil, err
	}
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	go d.Watch(wctx, reports)
	closeDriver := d.close
	d.close = func(ctx context.Context) error { stop(); return closeDriver(ctx) }
	return d, nil
}

// newDriver makes the driver chosen by --driver.
func newDriver(ctx context.Context, c *config, dev bool, log *slog.Logger) (*runningDriver, error) {
	switch c.Driver {
	case "local":
		sb, err := openSandbox(c, dev, log)
		if err != nil {
			return nil, err
		}
		d, err := localdriver.New(localdriver.Options{Dir: c.path("local"), Sandbox: sb, Logger: log.With("component", "localdriver"),
			BuildStepTimeout: c.BuildTimeout, MaxDepsBytes: c.DepsMaxBytes, WarmPool: c.WarmPool})
		if err != nil {
			_ = sb.Close()
			return nil, err
		}
		stop := func(ctx context.Context) error {
			err := d.Close(ctx)
			if serr := sb.Close(); err == nil {
				err = serr
			}
			return err
		}
		return &runningDriver{Driver: d, close: stop, sandbox: string(sb.Mode())}, nil
	case "kubernetes":
		return openKubernetes(ctx, c, log)
	default:
		return nil, fmt.Errorf("--driver must be local or kubernetes, not %q", c.Driver)
	}
}

// openKubernetes connects to the cluster (KUBECONFIG, else the in-cluster
// service account).
func openKubernetes(ctx context.Context, c *config, log *slog.Logger) (*runningDriver, error) {
	var rc *rest.Config
	var err error
	if c.Kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	s3URL := c.BuildS3URL
	if s3URL == "" && c.S3Endpoint != "" && !strings.Contains(c.S3Endpoint, "://") {
		scheme := "http://"
		if c.S3UseSSL {
			scheme = "https://"
		}
		s3URL = scheme + c.S3Endpoint
	} else if s3URL == "" {
		s3URL = c.S3Endpoint
	}
	allow, err := domain.ParseEgressAllow(c.EgressAllow)
	if err != nil {
		return nil, fmt.Errorf("--egress-allow: %s", domain.ErrorMessage(err))
	}
	for _, r := range allow {
		if r.HostLoopback() {
			log.Warn("--egress-allow: a port of the machine's loopback means nothing to a pod; left out", "rule", r.String())
		}
	}
	mirrors, err := parseMirrors(c.RegistryMirrors)
	if err != nil {
		return nil, err
	}
	d, err := k8sdriver.New(client, k8sdriver.Config{
		EgressAllow: allow,
		Registry:    c.Registry, BuildNamespace: c.BuildNamespace, ControlPlaneNamespace: c.SystemNS,
		KanikoImage: c.KanikoImage, Cache: c.BuildCache, CacheRepo: c.BuildCacheRepo,
		RegistryMirrors: mirrors, InsecureRegistries: splitList(c.InsecureRegistries),
		Endpoint: k8sdriver.EndpointMode(c.FunctionEndpoint),
		S3:       k8sdriver.S3Config{Bucket: c.S3Bucket, Endpoint: s3URL, Region: c.S3Region},
	})
	if err != nil {
		return nil, err
	}
	log.Info("running functions on Kubernetes", "host", rc.Host, "registry", c.Registry)
	return &runningDriver{Driver: d, close: func(context.Context) error { return nil }, sandbox: "kubernetes"}, nil
}

// parseMirrors reads --registry-mirrors: comma-separated registry=mirror pairs.
func parseMirrors(s string) (map[string]string, error) {
	mirrors := map[string]string{}
	for _, pair := range splitList(s) {
		from, to, ok := strings.Cut(pair, "=")
		if !ok || from == "" || to == "" || strings.ContainsAny(pair, " \t") {
			return nil, fmt.Errorf("--registry-mirrors: %q is not registry=mirror (e.g. index.docker.io=mirror.internal:5000)", pair)
		}
		mirrors[from] = to
	}
	return mirrors, nil
}

// openSandbox makes the sandbox of the local driver's function processes.
// Without bubblewrap (or user namespaces), `sless dev` warns once and runs
// them unsandboxed; `sless serve` refuses to start unless told
// --insecure-no-sandbox, which both commands take to mean no sandbox at all.
func openSandbox(c *config, dev bool, log *slog.Logger) (*sandbox.Sandbox, error) {
	allow, err := egress.ParseAllow(c.EgressAllow)
	if err != nil {
		return nil, fmt.Errorf("--egress-allow: %s", domain.ErrorMessage(err))
	}
	opts := sandbox.Options{Dir: c.path("sandbox"), MaxProcs: c.SandboxMaxProcs, TmpBytes: c.SandboxTmpBytes, Insecure: c.NoSandbox, Allow: allow}
	sb, err := sandbox.New(opts)
	switch {
	case err == nil && c.NoSandbox:
		log.Warn("INSECURE: --insecure-no-sandbox: functions run as plain processes of this user and can read everything it can, keys and database password included, and reach every port of this machine")
		return sb, nil
	case err == nil:
		log.Info("functions run sandboxed", "sandbox", sb.Describe())
		if why := sb.CgroupsWhy(); why != "" {
			log.Warn("no cgroup for function processes: memory_mb bounds each process, not a function's processes together", "reason", why)
		}
		if !sb.NetworkEnforced() {
			log.Warn("the egress policy is not enforced (not running as root): functions can reach private and link-local addresses (the cloud metadata endpoint included); the host's loopback is cut off")
		}
		return sb, nil
	case !dev:
		return nil, fmt.Errorf("%s\nthe local driver runs untrusted code only in a sandbox: install bubblewrap (apt-get install bubblewrap), "+
			"use --driver kubernetes, or pass --insecure-no-sandbox to run functions unsandboxed", domain.ErrorMessage(err))
	}
	log.Warn("INSECURE: functions run UNSANDBOXED as plain processes of this user, able to read everything it can (install bubblewrap to sandbox them)",
		"reason", domain.ErrorMessage(err))
	opts.Insecure = true
	return sandbox.New(opts)
}
