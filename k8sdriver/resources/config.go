package resources

import (
	"context"
	"time"

	"github.com/slessio/sless/domain"
)

// Config is what the driver needs to know about the cluster it runs on, and
// what the builders read from it; k8sdriver.Config is this type. The zero
// value of every field but Registry and S3 takes the default named on it
// (WithDefaults).
type Config struct {
	// Registry is where images are pushed and pulled from, e.g.
	// "registry.example.com/sless"; an image is Registry/<ns>/<fn>:<tag>.
	Registry string
	// BuildNamespace holds the kaniko Jobs and their Secrets (default
	// "sless-builds"). It is created by the deploy manifests, labelled
	// pod-security baseline: kaniko runs as root in its container.
	BuildNamespace string
	// ControlPlaneNamespace is where the proxy runs; tenant NetworkPolicies
	// admit ingress from it only (default "sless-system").
	ControlPlaneNamespace string
	// KanikoImage is the builder image, pinned by digest in production
	// (default DefaultKanikoImage).
	KanikoImage string
	// RegistryMirrors sends kaniko's pulls of a registry to another
	// (kaniko --registry-map, e.g. "index.docker.io" -> "mirror.internal:5000"):
	// an air-gapped cluster's base images come from its own registry.
	RegistryMirrors map[string]string
	// InsecureRegistries are the registries kaniko pulls from and pushes to
	// over plain HTTP (kaniko --insecure-registry): a registry inside the
	// cluster without TLS.
	InsecureRegistries []string
	// Cache turns on kaniko's layer cache (--cache=true), in CacheRepo when set.
	Cache     bool
	CacheRepo string
	// S3 is where build contexts are read from.
	S3 S3Config
	// RegistrySecret names the docker config Secret (type
	// kubernetes.io/dockerconfigjson) in BuildNamespace that kaniko pushes with
	// (default "sless-registry"); it is mounted as a file, never put in env.
	RegistrySecret string
	// BuildTimeout is the kaniko Job's activeDeadlineSeconds (default 15 min).
	BuildTimeout time.Duration
	// BuildCPU and BuildMemory limit the kaniko container (defaults "2", "2Gi").
	BuildCPU, BuildMemory string
	// JobStartGrace is added to a run's timeout_sec for its Job's
	// activeDeadlineSeconds: the wrapper enforces timeout_sec itself, the
	// deadline is the backstop that also covers pulling the image (default 60 s).
	JobStartGrace time.Duration
	// FinishedJobTTL is set on a run's Job once its output is captured (default 1 h).
	FinishedJobTTL time.Duration
	// CronTimeZone is the CronJobs' timeZone; empty leaves the controller's.
	CronTimeZone string
	// Endpoint chooses what the driver's Deploy returns: EndpointService
	// (default) or EndpointSlices.
	Endpoint EndpointMode
	// ClusterDomain is the cluster's DNS suffix (default "cluster.local").
	ClusterDomain string
	// Quota is the hard ResourceQuota of every tenant namespace (default DefaultQuota).
	Quota map[string]string
	// LimitDefault and LimitDefaultRequest are the tenant LimitRange's
	// container defaults (defaults: memory 256Mi / cpu 500m; memory 128Mi / cpu 50m).
	LimitDefault, LimitDefaultRequest map[string]string
	// EgressAllow are the destinations the operator opens to functions
	// (SLESS_EGRESS_ALLOW) besides DNS and the internet, which every
	// function reaches without domain.EgressBlocked (private, link-local —
	// the cloud metadata endpoint — and reserved ranges): what the local
	// driver's sandboxes get. Rules for the machine's loopback mean nothing
	// to a pod and are left out.
	EgressAllow []domain.EgressRule
	// CrashLoopRestarts is how many restarts of a new version's container make
	// the driver's Deploy give up with EUNPROCESSABLE (default 3).
	CrashLoopRestarts int32
	// Poll is how often the driver looks at a Job or Deployment it waits for
	// (default 1 s).
	Poll time.Duration
	// CrashWatchInterval and CronWatchInterval are how often Watch lists the
	// serving pods for crash loops (default 10 s) and the finished Jobs of
	// schedules (default 5 s).
	CrashWatchInterval, CronWatchInterval time.Duration
	// Logs reads container output; nil uses k8sdriver.KubeletLogs on the
	// driver's client.
	Logs LogSource
}

// LogSource reads container output. It is the one thing of the driver that
// needs a kubelet: k8sdriver.KubeletLogs asks the API server, which asks the
// node; tests on a cluster without nodes fake it. It is declared here, with
// no implementation, because Config.Logs holds one.
type LogSource interface {
	// ContainerLogs returns the output of a container, or an error with a
	// domain code (EUNAVAILABLE when the node cannot be reached).
	ContainerLogs(ctx context.Context, r LogRequest) (Logs, error)
}

// LogRequest names the output to read.
type LogRequest struct {
	Namespace, Pod, Container string
	// Previous reads the last terminated instance of a restarted container.
	Previous bool
	// TailLines keeps only the last lines (0: all, up to 1 MiB).
	TailLines int64
}

// Logs is a container's output.
type Logs struct {
	Stdout, Stderr string
}

// S3Config locates build contexts for kaniko. The credentials are in a Secret
// of the build namespace with keys access-key and secret-key.
type S3Config struct {
	Bucket   string
	Endpoint string // e.g. "http://minio.sless-system.svc:9000"; empty means AWS
	Region   string // default "us-east-1"
	// CredentialsSecret names the Secret (default "sless-s3").
	CredentialsSecret string
}

// EndpointMode is how the driver's Deploy names a function's endpoint for the proxy.
type EndpointMode string

// The endpoint modes.
const (
	// EndpointService returns the Service's DNS name,
	// http://<fn>.<ns>.svc.<domain>:8080: kube-proxy spreads the load.
	EndpointService EndpointMode = "service"
	// EndpointSlices returns http://<ip>:8080 of a ready pod of the deployed
	// version, from the Service's EndpointSlices, for a proxy that balances itself.
	EndpointSlices EndpointMode = "endpointslices"
)

// DefaultKanikoImage is the builder image when Config.KanikoImage is empty:
// the last upstream kaniko release. Production configuration should pin a
// maintained fork by digest.
const DefaultKanikoImage = "gcr.io/kaniko-project/executor:v1.23.2"

// DefaultQuota is the ResourceQuota of a tenant namespace when Config.Quota is nil.
var DefaultQuota = map[string]string{
	"pods":                 "50",
	"requests.cpu":         "4",
	"requests.memory":      "8Gi",
	"limits.memory":        "16Gi",
	"count/jobs.batch":     "200",
	"count/cronjobs.batch": "50",
	"services":             "50",
	"secrets":              "200",
}

// WithDefaults returns c with every unset field but Registry and S3.Bucket
// set to its default.
func (c Config) WithDefaults() Config {
	str := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	dur := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	str(&c.BuildNamespace, "sless-builds")
	str(&c.ControlPlaneNamespace, "sless-system")
	str(&c.KanikoImage, DefaultKanikoImage)
	str(&c.RegistrySecret, "sless-registry")
	str(&c.S3.Region, "us-east-1")
	str(&c.S3.CredentialsSecret, "sless-s3")
	str(&c.BuildCPU, "2")
	str(&c.BuildMemory, "2Gi")
	str(&c.ClusterDomain, "cluster.local")
	if c.Endpoint == "" {
		c.Endpoint = EndpointService
	}
	dur(&c.BuildTimeout, 15*time.Minute)
	dur(&c.JobStartGrace, time.Minute)
	dur(&c.FinishedJobTTL, time.Hour)
	dur(&c.Poll, time.Second)
	if c.Quota == nil {
		c.Quota = DefaultQuota
	}
	if c.LimitDefault == nil {
		c.LimitDefault = map[string]string{"memory": "256Mi", "cpu": "500m"}
	}
	if c.LimitDefaultRequest == nil {
		c.LimitDefaultRequest = map[string]string{"memory": "128Mi", "cpu": "50m"}
	}
	if c.CrashLoopRestarts <= 0 {
		c.CrashLoopRestarts = 3
	}
	if c.CrashWatchInterval <= 0 {
		c.CrashWatchInterval = 10 * time.Second
	}
	if c.CronWatchInterval <= 0 {
		c.CronWatchInterval = 5 * time.Second
	}
	return c
}

// Validate returns EINVALID for a configuration the driver cannot work with;
// c is one that WithDefaults returned.
func (c Config) Validate() error {
	if c.Registry == "" {
		return domain.Errorf(domain.EINVALID, "k8sdriver: Registry is required")
	}
	if c.S3.Bucket == "" {
		return domain.Errorf(domain.EINVALID, "k8sdriver: S3.Bucket is required")
	}
	if c.Endpoint != EndpointService && c.Endpoint != EndpointSlices {
		return domain.Errorf(domain.EINVALID, "k8sdriver: Endpoint must be %q or %q, got %q", EndpointService, EndpointSlices, c.Endpoint)
	}
	for _, m := range []map[string]string{c.Quota, c.LimitDefault, c.LimitDefaultRequest} {
		if _, err := resourceList(m); err != nil {
			return err
		}
	}
	for _, q := range []string{c.BuildCPU, c.BuildMemory} {
		if _, err := quantity(q); err != nil {
			return err
		}
	}
	return nil
}
