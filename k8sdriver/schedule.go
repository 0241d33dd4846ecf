package k8sdriver

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// ApplySchedule creates or updates the CronJob of a cron trigger; a disabled
// trigger's CronJob is suspended. The namespace secrets the version uses
// are its runs' Secret (resources.CronSecret), owned by the CronJob; the
// trigger's Secrets of other versions are deleted. A disabled trigger's
// secrets are not opened (disabling one whose secret was deleted works);
// they are when it is enabled again. It returns EINVALID for a bad spec or
// schedule, EUNPROCESSABLE for a secret that cannot be opened, and the
// mapped API error otherwise.
func (d *Driver) ApplySchedule(ctx context.Context, c driver.CronSpec) error {
	if err := domain.ValidateName("trigger", c.Trigger); err != nil {
		return err
	}
	if _, err := domain.ParseCron(c.Schedule); err != nil {
		return err
	}
	var values driver.SecretValues
	if c.Enabled {
		var err error
		if values, err = d.openSecrets(ctx, c.Workload); err != nil {
			return err
		}
	}
	if err := d.prepare(ctx, c.Workload); err != nil {
		return err
	}
	// The CronJob first, so that its Secret has an owner from the start:
	// a run due in between waits for the Secret (the kubelet retries).
	cj, err := d.client.BatchV1().CronJobs(c.Namespace).Apply(ctx, resources.CronJob(d.cfg, c), applyOpts)
	if err != nil {
		return mapErr("apply cron job", err)
	}
	if s := resources.CronSecret(c, values); s != nil && c.Enabled {
		if err := d.applySecret(ctx, s.WithOwnerReferences(resources.CronJobOwner(cj)), "secrets of trigger "+c.Trigger); err != nil {
			return err
		}
	}
	return d.deleteSecrets(ctx, c.Namespace, resources.SupersededCronSecrets(c), "secrets of the other versions of trigger "+c.Trigger)
}

// RemoveSchedule deletes the CronJob of a trigger, the Jobs it started and
// its Secrets; a trigger without one is not an error. It returns the mapped
// API error.
func (d *Driver) RemoveSchedule(ctx context.Context, namespace, trigger string) error {
	err := d.client.BatchV1().CronJobs(namespace).Delete(ctx, resources.CronJobName(trigger), deleteOpts)
	if err := ignoreNotFound(err); err != nil {
		return mapErr("delete cron job", err)
	}
	sel := labels.Set{resources.LabelManagedBy: resources.ManagedBy, resources.LabelTrigger: trigger}.String()
	err = d.client.BatchV1().Jobs(namespace).DeleteCollection(ctx, deleteOpts, metav1.ListOptions{LabelSelector: sel})
	if err := ignoreNotFound(err); err != nil {
		return mapErr("delete jobs of trigger "+trigger, err)
	}
	return d.deleteSecrets(ctx, namespace, resources.CronSecrets(trigger), "secrets of trigger "+trigger)
}
