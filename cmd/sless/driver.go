package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/k8sdriver"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox"
	"github.com/slessio/sless/workers"
)

// runningDriver is a driver with what the platform needs to stop it.
type runningDriver struct {
	workers.Driver
	close func(ctx context.Context) error
	// sandbox is how function processes are isolated: bubblewrap, none
	// (local) or kubernetes.
	sandbox string
}

// openDriver returns the driver chosen by --driver. onFailure is how a driver
// reports a crash-looping function after a successful deploy (the platform
// rolls it out again, which records the failure).
func openDriver(ctx context.Context, c *config, dev bool, log *slog.Logger, onFailure func(ns, fn string)) (*runningDriver, error) {
	switch c.Driver {
	case "local":
		sb, err := openSandbox(c, dev, log)
		if err != nil {
			return nil, err
		}
		d, err := localdriver.New(localdriver.Options{Dir: c.path("local"), Sandbox: sb, Logger: log.With("component", "localdriver"), OnFailure: onFailure,
			BuildStepTimeout: c.BuildTimeout, MaxDepsBytes: c.DepsMaxBytes})
		if err != nil {
			return nil, err
		}
		return &runningDriver{Driver: d, close: d.Close, sandbox: string(sb.Mode())}, nil
	case "kubernetes":
		return openKubernetes(ctx, c, log, onFailure)
	default:
		return nil, fmt.Errorf("--driver must be local or kubernetes, not %q", c.Driver)
	}
}

// openKubernetes connects to the cluster (KUBECONFIG, else the in-cluster
// service account) and watches for crash loops until the platform stops.
func openKubernetes(ctx context.Context, c *config, log *slog.Logger, onFailure func(ns, fn string)) (*runningDriver, error) {
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
	d, err := k8sdriver.New(client, k8sdriver.Config{
		Registry: c.Registry, BuildNamespace: c.BuildNamespace, ControlPlaneNamespace: c.SystemNS,
		KanikoImage: c.KanikoImage, Cache: c.BuildCache, CacheRepo: c.BuildCacheRepo,
		S3: k8sdriver.S3Config{Bucket: c.S3Bucket, Endpoint: s3URL, Region: c.S3Region},
	})
	if err != nil {
		return nil, err
	}
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	go d.WatchCrashLoops(wctx, 10*time.Second, onFailure)
	log.Info("running functions on Kubernetes", "host", rc.Host, "registry", c.Registry)
	return &runningDriver{Driver: d, close: func(context.Context) error { stop(); return nil }, sandbox: "kubernetes"}, nil
}

// openSandbox makes the sandbox of the local driver's function processes.
// Without bubblewrap (or user namespaces), `sless dev` warns once and runs
// them unsandboxed; `sless serve` refuses to start unless told
// --insecure-no-sandbox, which both commands take to mean no sandbox at all.
func openSandbox(c *config, dev bool, log *slog.Logger) (*sandbox.Sandbox, error) {
	opts := sandbox.Options{Dir: c.path("sandbox"), MaxProcs: c.SandboxMaxProcs, TmpBytes: c.SandboxTmpBytes, Insecure: c.NoSandbox}
	sb, err := sandbox.New(opts)
	switch {
	case err == nil && c.NoSandbox:
		log.Warn("INSECURE: --insecure-no-sandbox: functions run as plain processes of this user and can read everything it can, keys and database password included")
		return sb, nil
	case err == nil:
		log.Info("functions run sandboxed", "sandbox", sb.Describe())
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
