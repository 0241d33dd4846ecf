package k8sdriver

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

var _ driver.SecretOpenerUser = (*Driver)(nil)

// UseSecrets implements driver.SecretOpenerUser: o opens the namespace
// secrets of the versions the driver starts (see resources/secrets.go for
// how they reach the pods).
func (d *Driver) UseSecrets(o driver.SecretOpener) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.opener = o
}

// openSecrets opens the namespace secrets w uses (none: nothing to open).
// Errors are driver.OpenSecrets': EUNPROCESSABLE for a secret that cannot
// be opened or for secrets without an opener, EUNAVAILABLE.
func (d *Driver) openSecrets(ctx context.Context, w driver.Workload) (driver.SecretValues, error) {
	d.mu.Lock()
	o := d.opener
	d.mu.Unlock()
	return driver.OpenSecrets(ctx, o, w)
}

// applySecret applies a Secret that carries namespace secrets; what names
// it for errors. Errors never hold a value: EUNPROCESSABLE for values over
// what one Secret holds, or the mapped API error.
func (d *Driver) applySecret(ctx context.Context, s *corev1ac.SecretApplyConfiguration, what string) error {
	if n := resources.SecretBytes(s); n > resources.MaxSecretBytes {
		return domain.Errorf(domain.EUNPROCESSABLE, "%s: %d bytes together, over the %d bytes one Kubernetes Secret holds; use fewer or smaller secrets",
			what, n, resources.MaxSecretBytes)
	}
	_, err := d.client.CoreV1().Secrets(*s.Namespace).Apply(ctx, s, applyOpts)
	return mapErr("apply "+what, err)
}

// deleteSecrets deletes the Secrets of ns that selector selects; what
// names them for errors.
func (d *Driver) deleteSecrets(ctx context.Context, ns, selector, what string) error {
	err := d.client.CoreV1().Secrets(ns).DeleteCollection(ctx, deleteOpts, metav1.ListOptions{LabelSelector: selector})
	return mapErr("delete "+what, ignoreNotFound(err))
}
