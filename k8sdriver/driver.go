package k8sdriver

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// Driver runs functions on a Kubernetes cluster through client-go. It is
// safe for concurrent use; every method uses the caller's context.
type Driver struct {
	client kubernetes.Interface
	cfg    Config
	logs   LogSource

	mu      sync.Mutex
	tenants map[string]bool     // namespaces whose tenant objects were applied
	opener  driver.SecretOpener // UseSecrets'; nil: none
}

var (
	_ driver.Driver    = (*Driver)(nil)
	_ driver.Scheduler = (*Driver)(nil)
)

// The driver's configuration is declared in resources, whose builders read
// it (with its defaults, resources.DefaultKanikoImage and DefaultQuota);
// these names let New's callers configure the driver in this package's terms.
type (
	Config       = resources.Config
	S3Config     = resources.S3Config
	EndpointMode = resources.EndpointMode
	LogSource    = resources.LogSource
	LogRequest   = resources.LogRequest
	Logs         = resources.Logs
)

// The endpoint modes (see resources.EndpointMode).
const (
	EndpointService = resources.EndpointService
	EndpointSlices  = resources.EndpointSlices
)

// New returns a driver on client. It returns EINVALID for a configuration
// without Registry or S3.Bucket, or with a bad quantity or endpoint mode.
func New(client kubernetes.Interface, cfg Config) (*Driver, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logs := cfg.Logs
	if logs == nil {
		logs = KubeletLogs{Client: client}
	}
	return &Driver{client: client, cfg: cfg, logs: logs, tenants: map[string]bool{}}, nil
}

// FieldManager is the server-side apply field manager of every driver write.
const FieldManager = "sless"

// applyOpts makes every write a server-side apply by FieldManager that
// takes over fields another manager (a person with kubectl) changed.
var applyOpts = metav1.ApplyOptions{FieldManager: FieldManager, Force: true}

// EnsureNamespace applies the tenant objects of ns (see TenantObjects), once
// per driver: later calls for the same namespace return at once. It returns
// EINVALID for a bad namespace and the mapped API error otherwise.
func (d *Driver) EnsureNamespace(ctx context.Context, ns string) error {
	d.mu.Lock()
	done := d.tenants[ns]
	d.mu.Unlock()
	if done {
		return nil
	}
	t, err := resources.TenantObjects(d.cfg, ns)
	if err != nil {
		return err
	}
	if _, err := d.client.CoreV1().Namespaces().Apply(ctx, t.Namespace, applyOpts); err != nil {
		return mapErr("apply namespace "+ns, err)
	}
	if _, err := d.client.NetworkingV1().NetworkPolicies(ns).Apply(ctx, t.NetworkPolicy, applyOpts); err != nil {
		return mapErr("apply network policy", err)
	}
	if _, err := d.client.CoreV1().ResourceQuotas(ns).Apply(ctx, t.Quota, applyOpts); err != nil {
		return mapErr("apply resource quota", err)
	}
	if _, err := d.client.CoreV1().LimitRanges(ns).Apply(ctx, t.LimitRange, applyOpts); err != nil {
		return mapErr("apply limit range", err)
	}
	d.mu.Lock()
	d.tenants[ns] = true
	d.mu.Unlock()
	return nil
}

// prepare makes sure a workload's namespace and environment Secret exist.
func (d *Driver) prepare(ctx context.Context, w driver.Workload) error {
	if err := validateWorkload(w); err != nil {
		return err
	}
	if err := d.EnsureNamespace(ctx, w.Namespace); err != nil {
		return err
	}
	if s := resources.EnvSecret(w); s != nil {
		if _, err := d.client.CoreV1().Secrets(w.Namespace).Apply(ctx, s, applyOpts); err != nil {
			return mapErr("apply environment secret", err)
		}
	}
	return nil
}

// validateWorkload returns EINVALID for a workload that cannot become objects.
func validateWorkload(w driver.Workload) error {
	if err := domain.ValidateNamespace(w.Namespace); err != nil {
		return err
	}
	if err := domain.ValidateName("function", w.Function); err != nil {
		return err
	}
	if w.Image == "" {
		return domain.Errorf(domain.EINVALID, "function %s version %d has no image: build it first", w.Function, w.Version)
	}
	return nil
}

// poll calls check every Poll until it reports done or fails; when ctx ends
// first it returns EUNAVAILABLE naming what it waited for.
func (d *Driver) poll(ctx context.Context, what string, check func() (bool, error)) error {
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return domain.Errorf(domain.EUNAVAILABLE, "waiting for %s: %v", what, ctx.Err())
		case <-time.After(d.cfg.Poll):
		}
	}
}
