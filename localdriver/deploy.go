package localdriver

import (
	"context"
	"sync"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
)

// function is the HTTP workload of one function: the instance serving it and
// those of earlier versions still draining.
type function struct {
	key fnKey
	d   *Driver

	mu      sync.Mutex // serializes Deploy, Remove and stopAll
	current *instance

	drainMu  sync.Mutex
	draining map[*instance]*time.Timer
}

// Deploy runs the deployment's version as one supervised server process
// serving on a Unix socket of the driver's, with the function's variables
// plus SLESS_LISTEN_FD and SLESS_ENTRYPOINT, and returns "unix:<socket>"
// once /_sless/health answers 200. One process serves any Replicas > 0.
//
// The same version already running keeps its process and endpoint. Another
// version is started next to the running one; once it is healthy Deploy
// returns its endpoint and the old process is stopped after Options.Drain
// (10 s), so requests routed by the old endpoint still finish. If the new
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
	k, err := checkKey(dep.Namespace, dep.Function)
	if err != nil {
		return "", err
	}
	f, err := d.function(k)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if dep.Replicas <= 0 {
		f.stopLocked(ctx)
		return "", nil
	}
	if dep.Image == "" {
		dep.Image = imageName(k, dep.Version)
	}
	cur := f.current
	if cur != nil && cur.version == dep.Version && cur.image == dep.Image {
		if msg := cur.failed(); msg != "" {
			return "", domain.Errorf(domain.EUNPROCESSABLE, "%s", msg)
		}
		return cur.endpoint, nil
	}
	_, dir, err := d.runnableDir(ctx, dep.Workload)
	if err != nil {
		return "", err
	}
	in, err := d.startInstance(ctx, k, dep.Workload, dir)
	if err != nil {
		return "", err
	}
	if d.isClosed() { // Close ran while the process started: it must not outlive it
		in.stop(ctx)
		return "", errClosed
	}
	f.current = in
	if cur != nil {
		f.drain(cur)
	}
	return in.endpoint, nil
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
	all := []*instance{}
	if f.current != nil {
		all = append(all, f.current)
		f.current = nil
	}
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
