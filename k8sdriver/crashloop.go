package k8sdriver

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// Watch implements driver.Driver: it polls the cluster for crash loops
// (CrashWatchInterval) and, when r.CronRan is set, for finished runs of
// schedules (CronWatchInterval) until ctx ends.
func (d *Driver) Watch(ctx context.Context, r driver.Reports) {
	var wg sync.WaitGroup
	if r.Crashed != nil {
		wg.Go(func() { d.watchCrashLoops(ctx, d.cfg.CrashWatchInterval, r.Crashed) })
	}
	if r.CronRan != nil {
		wg.Go(func() { d.watchCronRuns(ctx, d.cfg.CronWatchInterval, r.CronRan) })
	}
	wg.Wait()
}

// watchCrashLoops looks at the serving pods of every tenant every interval
// until ctx ends and calls report(namespace, function) once for each pod
// whose function container has restarted CrashLoopRestarts times: the
// wiring enqueues a rollout for it, whose Deploy then fails with
// EUNPROCESSABLE (as for the local driver's crash loops). List errors are
// retried at the next tick.
func (d *Driver) watchCrashLoops(ctx context.Context, interval time.Duration, report func(namespace, function string)) {
	reported := map[string]bool{} // pod UIDs
	sel := labels.Set{resources.LabelManagedBy: resources.ManagedBy, resources.LabelComponent: "server"}.String()
	for {
		pods, err := d.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err == nil {
			seen := map[string]bool{}
			for _, p := range pods.Items {
				uid := string(p.UID)
				seen[uid] = true
				for _, cs := range p.Status.ContainerStatuses {
					if cs.Name == resources.ContainerName && cs.RestartCount >= d.cfg.CrashLoopRestarts && !reported[uid] && p.DeletionTimestamp == nil {
						reported[uid] = true
						report(p.Namespace, p.Labels[resources.LabelFunction])
					}
				}
			}
			for uid := range reported {
				if !seen[uid] {
					delete(reported, uid)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
