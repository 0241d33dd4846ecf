package k8sdriver

import (
	"context"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/k8sdriver/resources"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// deleteOpts deletes dependents (ReplicaSets, Pods) in the background.
var deleteOpts = metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)}

// Remove deletes every object of a function: Deployment, ReplicaSets,
// Service, Jobs and CronJobs, Secrets (environment, namespace secrets, runs'
// events) and pods in its namespace, and its build Jobs in the build namespace; then it waits until
// none is left, so a running job is gone when it returns. Removing what does
// not exist is not an error. It returns EINVALID for bad names, EUNAVAILABLE
// when ctx ends first, or the mapped API error.
func (d *Driver) Remove(ctx context.Context, namespace, function string) error {
	if err := domain.ValidateNamespace(namespace); err != nil {
		return err
	}
	if err := domain.ValidateName("function", function); err != nil {
		return err
	}
	name := resources.ObjectName(function)
	if err := d.client.AppsV1().Deployments(namespace).Delete(ctx, name, deleteOpts); ignoreNotFound(err) != nil {
		return mapErr("delete deployment", err)
	}
	if err := d.client.CoreV1().Services(namespace).Delete(ctx, name, deleteOpts); ignoreNotFound(err) != nil {
		return mapErr("delete service", err)
	}
	sel := metav1.ListOptions{LabelSelector: labels.Set{resources.LabelManagedBy: resources.ManagedBy, resources.LabelFunction: function}.String()}
	buildSel := metav1.ListOptions{LabelSelector: labels.Set{resources.LabelManagedBy: resources.ManagedBy, resources.LabelNamespace: namespace, resources.LabelFunction: function}.String()}
	steps := []struct {
		what string
		del  func() error
	}{
		{"cron jobs", func() error { return d.client.BatchV1().CronJobs(namespace).DeleteCollection(ctx, deleteOpts, sel) }},
		{"jobs", func() error { return d.client.BatchV1().Jobs(namespace).DeleteCollection(ctx, deleteOpts, sel) }},
		{"replica sets", func() error { return d.client.AppsV1().ReplicaSets(namespace).DeleteCollection(ctx, deleteOpts, sel) }},
		{"pods", func() error { return d.client.CoreV1().Pods(namespace).DeleteCollection(ctx, deleteOpts, sel) }},
		{"secrets", func() error { return d.client.CoreV1().Secrets(namespace).DeleteCollection(ctx, deleteOpts, sel) }},
		{"build jobs", func() error {
			return d.client.BatchV1().Jobs(d.cfg.BuildNamespace).DeleteCollection(ctx, deleteOpts, buildSel)
		}},
		{"build pods", func() error {
			return d.client.CoreV1().Pods(d.cfg.BuildNamespace).DeleteCollection(ctx, deleteOpts, buildSel)
		}},
	}
	for _, s := range steps {
		if err := s.del(); ignoreNotFound(err) != nil {
			return mapErr("delete "+s.what+" of "+function, err)
		}
	}
	return d.poll(ctx, "the objects of "+function+" to go", func() (bool, error) {
		left, err := d.Leftovers(ctx, namespace, function)
		return len(left) == 0, err
	})
}

// Leftovers lists the objects of a function that still exist (kind/name),
// for Remove and for tests that check it. It returns the mapped API error.
func (d *Driver) Leftovers(ctx context.Context, namespace, function string) ([]string, error) {
	sel := metav1.ListOptions{LabelSelector: labels.Set{resources.LabelManagedBy: resources.ManagedBy, resources.LabelFunction: function}.String()}
	buildSel := metav1.ListOptions{LabelSelector: labels.Set{resources.LabelManagedBy: resources.ManagedBy, resources.LabelNamespace: namespace, resources.LabelFunction: function}.String()}
	name := resources.ObjectName(function)
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	kinds := []struct {
		kind string
		list func() (runtime.Object, error)
	}{
		{"deployment", func() (runtime.Object, error) { return d.client.AppsV1().Deployments(namespace).List(ctx, byName) }},
		{"service", func() (runtime.Object, error) { return d.client.CoreV1().Services(namespace).List(ctx, byName) }},
		{"replicaset", func() (runtime.Object, error) { return d.client.AppsV1().ReplicaSets(namespace).List(ctx, sel) }},
		{"cronjob", func() (runtime.Object, error) { return d.client.BatchV1().CronJobs(namespace).List(ctx, sel) }},
		{"job", func() (runtime.Object, error) { return d.client.BatchV1().Jobs(namespace).List(ctx, sel) }},
		{"pod", func() (runtime.Object, error) { return d.client.CoreV1().Pods(namespace).List(ctx, sel) }},
		{"secret", func() (runtime.Object, error) { return d.client.CoreV1().Secrets(namespace).List(ctx, sel) }},
		{"build job", func() (runtime.Object, error) {
			return d.client.BatchV1().Jobs(d.cfg.BuildNamespace).List(ctx, buildSel)
		}},
		{"build pod", func() (runtime.Object, error) {
			return d.client.CoreV1().Pods(d.cfg.BuildNamespace).List(ctx, buildSel)
		}},
	}
	var left []string
	for _, k := range kinds {
		list, err := k.list()
		if err != nil {
			return nil, mapErr("list "+k.kind+"s of "+function, err)
		}
		err = meta.EachListItem(list, func(o runtime.Object) error {
			m, err := meta.Accessor(o)
			if err == nil {
				left = append(left, k.kind+"/"+m.GetName())
			}
			return err
		})
		if err != nil {
			return nil, mapErr("read "+k.kind+" list", err)
		}
	}
	return left, nil
}
