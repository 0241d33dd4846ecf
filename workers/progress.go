package workers

import (
	"context"
	"sync"
	"time"

	"github.com/slessio/sless/store"
)

// progressEvery is how often a running build's new output is written for
// people to follow it.
const progressEvery = 300 * time.Millisecond

// buildOutput is BuildSpec.Progress: it collects a running build's output
// and writes it to the store every progressEvery (store.AppendBuildProgress),
// where GET .../versions/{n} shows it while the version builds. Writing is
// best effort: a store that is away costs the followers some lines, never
// the build (its whole log is in its outcome).
type buildOutput struct {
	store   *store.Store
	ns, fn  string
	version int

	mu      sync.Mutex
	pending []byte

	stop chan struct{}
	done chan struct{}
}

// followBuild starts collecting the output of a build of version v, after
// forgetting what an earlier attempt of it wrote.
func (w *Workers) followBuild(ctx context.Context, ns, fn string, v int) *buildOutput {
	o := &buildOutput{store: w.store, ns: ns, fn: fn, version: v, stop: make(chan struct{}), done: make(chan struct{})}
	_ = o.store.ClearBuildProgress(ctx, ns, fn, v)
	go o.run(context.WithoutCancel(ctx))
	return o
}

// Write keeps p for the next write to the store (the newest
// store.MaxBuildProgress bytes of what is pending).
func (o *buildOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.pending = append(o.pending, p...)
	if over := len(o.pending) - store.MaxBuildProgress; over > 0 {
		o.pending = o.pending[over:]
	}
	o.mu.Unlock()
	return len(p), nil
}

func (o *buildOutput) run(ctx context.Context) {
	defer close(o.done)
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			o.flush(ctx)
			return
		case <-t.C:
			o.flush(ctx)
		}
	}
}

func (o *buildOutput) flush(ctx context.Context) {
	o.mu.Lock()
	chunk := string(o.pending)
	o.pending = o.pending[:0]
	o.mu.Unlock()
	if chunk != "" {
		_ = o.store.AppendBuildProgress(ctx, o.ns, o.fn, o.version, chunk)
	}
}

// close writes what is pending and stops.
func (o *buildOutput) close() {
	close(o.stop)
	<-o.done
}

// forget removes the output once the build's outcome, with its whole log,
// is recorded.
func (o *buildOutput) forget(ctx context.Context) {
	_ = o.store.ClearBuildProgress(context.WithoutCancel(ctx), o.ns, o.fn, o.version)
}
