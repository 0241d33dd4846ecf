package localdriver

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
)

// function is the HTTP workload of one function: the instances of the
// version serving it and those of earlier versions still draining.
type function struct {
	key fnKey
	d   *Driver

	mu      sync.Mutex  // serializes Deploy, Scale, Remove and stopAll
	current []*instance // of one version, in start order

	drainMu  sync.Mutex
	draining map[*instance]*time.Timer
}

// Deploy runs the deployment's version as supervised server processes
// serving on Unix sockets of the driver's, with the function's variables
// plus SLESS_LISTEN_FD, SLESS_ENTRYPOINT and SLESS_CONCURRENCY, and returns
// the endpoint ("unix:<socket>") of the first once /_sless/health answers
// 200 on all of them. It is Scale, but that it never stops instances of the
// version already running: a rollout of the running version leaves the
// instances the proxy's scaler started alone.
//
// Another version is started next to the running one, as many instances as
// Replicas; once they are healthy the old ones are stopped after
// Options.Drain (10 s), so requests routed to them still finish. If the new
// version does not start, the old one keeps running.
//
// A version that exits before it is healthy, or does not get healthy within
// Options.StartTimeout, is EUNPROCESSABLE with the last lines of its stderr;
// so is the same version after it crash-looped (see Driver.Watch), until
// the function is scaled to zero or another version is deployed. Replicas 0
// stops every process of the function (SIGTERM to its process group, SIGKILL
// after Options.StopGrace) and returns "". Other errors: EINVALID (names,
// image), EUNAVAILABLE (ctx, shutdown), and those of runnableDir: a version
// built by another control plane is built here first.
func (d *Driver) Deploy(ctx context.Context, dep driver.Deployment) (string, error) {
	endpoints, err := d.converge(ctx, dep, false)
	if err != nil || len(endpoints) == 0 {
		return "", err
	}
	return endpoints[0], nil
}

// Scale implements driver.Driver: Deploy's convergence, to exactly Replicas
// instances. Instances are added next to the running ones (in parallel);
// scaling down stops the instances dep.Retire names, then the newest.
func (d *Driver) Scale(ctx context.Context, dep driver.Deployment) ([]string, error) {
	return d.converge(ctx, dep, true)
}

// converge brings the function to dep and returns the endpoints of its
// instances, sorted; down: fewer instances of the running version than run
// are wanted, and the extra ones are stopped.
func (d *Driver) converge(ctx context.Context, dep driver.Deployment, down bool) ([]string, error) {
	k, err := checkKey(dep.Namespace, dep.Function)
	if err != nil {
		return nil, err
	}
	f, err := d.function(k)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if dep.Replicas <= 0 {
		f.stopLocked(ctx)
		return nil, nil
	}
	if dep.Image == "" {
		dep.Image = imageName(k, dep.Version)
	}
	same := len(f.current) > 0 && f.current[0].version == dep.Version && f.current[0].image == dep.Image
	if same {
		for _, in := range f.current {
			if msg := in.failed(); msg != "" {
				return nil, domain.Errorf(domain.EUNPROCESSABLE, "%s", msg)
			}
		}
		if down && len(f.current) > dep.Replicas {
			f.retire(ctx, len(f.current)-dep.Replicas, dep.Retire)
		}
		if len(f.current) >= dep.Replicas {
			return f.endpoints(), nil
		}
	}
	want := dep.Replicas
	if same {
		want -= len(f.current)
	}
	_, dir, err := d.runnableDir(ctx, dep.Workload)
	if err != nil {
		return nil, err
	}
	started, err := d.startInstances(ctx, k, dep.Workload, dir, want)
	if err != nil {
		return nil, err
	}
	if same {
		f.current = append(f.current, started...)
		return f.endpoints(), nil
	}
	old := f.current
	f.current = started
	for _, in := range old {
		f.drain(in)
	}
	return f.endpoints(), nil
}

// startInstances starts n instances of a version in parallel. When one does
// not start, those that did are stopped and its error is returned.
func (d *Driver) startInstances(ctx context.Context, k fnKey, w driver.Workload, dir string, n int) ([]*instance, error) {
	ins := make([]*instance, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ins[i], errs[i] = d.startInstance(ctx, k, w, dir)
		}()
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil && d.isClosed() { // Close ran while they started: they must not outlive it
		err = errClosed
	}
	if err != nil {
		for _, in := range ins {
			if in != nil {
				in.stop(ctx)
			}
		}
		for _, e := range errs { // the first, with its code
			if e != nil {
				return nil, e
			}
		}
		return nil, err
	}
	return ins, nil
}

// retire stops n of the current instances at once: those whose endpoint
// names lists first, then the newest. f.mu is held.
func (f *function) retire(ctx context.Context, n int, names []string) {
	var stop, keep []*instance
	for _, in := range f.current {
		if len(stop) < n && slices.Contains(names, in.endpoint) {
			stop = append(stop, in)
		} else {
			keep = append(keep, in)
		}
	}
	for len(stop) < n {
		stop, keep = append(stop, keep[len(keep)-1]), keep[:len(keep)-1]
	}
	f.current = keep
	var wg sync.WaitGroup
	for _, in := range stop {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.stop(ctx)
		}()
	}
	wg.Wait()
}

// endpoints returns the endpoints of the current instances, sorted; f.mu is held.
func (f *function) endpoints() []string {
	eps := make([]string, len(f.current))
	for i, in := range f.current {
		eps[i] = in.endpoint
	}
	slices.Sort(eps)
	return eps
}

func (d *Driver) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// drain stops old after the drain time, unless stopAll stops it sooner.
func (f *function) drain(old *instance) {
	f.drainMu.Lock()
	defer f.drainMu.Unlock()
	if f.draining == nil {
		f.draining = map[*instance]*time.Timer{}
	}
	f.draining[old] = time.AfterFunc(f.d.opts.Drain, func() {
		old.stop(context.Background())
		f.drainMu.Lock()
		delete(f.draining, old)
		f.drainMu.Unlock()
	})
}

// stopLocked stops the current and the draining instances; f.mu is held.
func (f *function) stopLocked(ctx context.Context) {
	all := f.current
	f.current = nil
	f.drainMu.Lock()
	for in, t := range f.draining {
		t.Stop()
		all = append(all, in)
	}
	f.draining = nil
	f.drainMu.Unlock()
	var wg sync.WaitGroup
	for _, in := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.stop(ctx)
		}()
	}
	wg.Wait()
}

// stopAll stops every process of the function.
func (f *function) stopAll(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopLocked(ctx)
}
