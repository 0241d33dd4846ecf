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
// trigger's CronJob is suspended. It returns EINVALID for a bad spec or
// schedule and the mapped API error otherwise.
func (d *Driver) ApplySchedule(ctx context.Context, c driver.CronSpec) error {
	if err := domain.ValidateName("trigger", c.Trigger); err != nil {
		return err
	}
	if _, err := domain.ParseCron(c.Schedule); err != nil {
		return err
	}
	if err := d.prepare(ctx, c.Workload); err != nil {
		return err
	}
	_, err := d.client.BatchV1().CronJobs(c.Namespace).Apply(ctx, resources.CronJob(d.cfg, c), applyOpts)
	return mapErr("apply cron job", err)
}

// RemoveSchedule deletes the CronJob of a trigger and the Jobs it started;
// a trigger without one is not an error. It returns the mapped API error.
func (d *Driver) RemoveSchedule(ctx context.Context, namespace, trigger string) error {
	err := d.client.BatchV1().CronJobs(namespace).Delete(ctx, resources.CronJobName(trigger), deleteOpts)
	if err := ignoreNotFound(err); err != nil {
		return mapErr("delete cron job", err)
	}
	sel := labels.Set{resources.LabelManagedBy: resources.ManagedBy, resources.LabelTrigger: trigger}.String()
	err = d.client.BatchV1().Jobs(namespace).DeleteCollection(ctx, deleteOpts, metav1.ListOptions{LabelSelector: sel})
	return mapErr("delete jobs of trigger "+trigger, ignoreNotFound(err))
}
