package drivertest

import (
	"context"
	"sync"
)

// FailureRecorder collects crash-loop reports: pass its Record as the
// driver's Reports.Crashed (driver.Driver.Watch) and its Wait as
// Harness.WaitCrashLoop. The zero value is ready to use.
type FailureRecorder struct {
	mu      sync.Mutex
	counts  map[[2]string]int
	changed chan struct{} // closed and replaced on every Record
}

// Record notes that function in namespace crash-loops.
func (r *FailureRecorder) Record(namespace, function string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[[2]string]int{}
	}
	r.counts[[2]string{namespace, function}]++
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// Count returns how often the function was reported.
func (r *FailureRecorder) Count(namespace, function string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[[2]string{namespace, function}]
}

// Wait returns nil once the function was reported at least once, or ctx's error.
func (r *FailureRecorder) Wait(ctx context.Context, namespace, function string) error {
	for {
		r.mu.Lock()
		if r.counts[[2]string{namespace, function}] > 0 {
			r.mu.Unlock()
			return nil
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
