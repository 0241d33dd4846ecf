package proxy

import (
	"context"
	"math"
	"net/url"
	"slices"
	"time"

	"github.com/slessio/sless/domain"
)

// Autoscaling: a function runs from zero to max_instances instances, each
// taking up to its concurrency of requests at once. The data plane sends a
// request to the least loaded ready instance with room, and queues it
// (bounded by MaxWaiting, oldest first) when every one is full; the
// autoscaler sizes the instances on the requests in flight (being served
// or queued) as Knative's KPA does:
//
//   - every ScaleTick it samples each awake function's in-flight count;
//   - stable = ceil(mean over StableWindow / (concurrency × TargetUtilization)),
//     panic = the same over PanicWindow;
//   - panic mode starts when panic ≥ 2 × the ready instances and lasts until
//     a StableWindow passes without that; in it the instances only grow (to
//     panic), outside it they follow stable, shrinking by at most half at a
//     time;
//   - the result is kept within [max(min_instances, 1), max_instances] and
//     the namespace's quota (NamespaceMaxInstances, on this plane).
//
// An instance chosen for scale-down drains: it gets no new requests and is
// stopped (Driver.Scale with it retired) once those in flight finished, or
// after the function's timeout. Scale to zero stays the idle reaper's
// (sleepIfIdle): after the idle period without requests, unless
// min_instances ≥ 1.

// Defaults of the autoscaler's Config fields.
const (
	DefaultStableWindow      = 60 * time.Second
	DefaultPanicWindow       = 6 * time.Second
	DefaultTargetUtilization = 0.7
	DefaultMaxInstances      = 10
)

// instanceScaler is implemented by a Scaler that runs several instances of a
// function (DriverScaler: the driver's Scale); without it a function has
// one instance, which takes every request (no per-instance concurrency).
type instanceScaler interface {
	// Scale runs n instances of the function's active version, stopping
	// those retire names first when there are more, and returns the
	// endpoints of the ready ones.
	Scale(ctx context.Context, namespace, function string, n int, retire []string) ([]string, error)
}

// inst is one ready instance of a function as the proxy routes to it.
type inst struct {
	url      *url.URL
	busy     int  // requests sent to it and not finished; under entry.mu
	draining bool // chosen for scale-down: it takes no new requests
}

// window is a function's in-flight samples over the stable window, a ring.
type window struct {
	samples []int32
	next    int   // where the next sample goes
	n       int   // samples taken, up to len(samples)
	sum     int64 // of the samples in the ring
}

func (w *window) add(v int32) {
	if w.n == len(w.samples) {
		w.sum -= int64(w.samples[w.next])
	} else {
		w.n++
	}
	w.samples[w.next] = v
	w.sum += int64(v)
	w.next = (w.next + 1) % len(w.samples)
}

// means returns the mean of every sample and of the last k.
func (w *window) means(k int) (stable, panic float64) {
	if w.n == 0 {
		return 0, 0
	}
	k = min(k, w.n)
	var recent int64
	for i := 1; i <= k; i++ {
		recent += int64(w.samples[(w.next-i+len(w.samples))%len(w.samples)])
	}
	return float64(w.sum) / float64(w.n), float64(recent) / float64(k)
}

// limits is what bounds a function's instances, from its route.
func (p *Proxy) limits(cfg *routeCfg) (minN, maxN, concurrency int) {
	minN, maxN = cfg.Scale.MinInstances, cfg.Scale.MaxInstances
	if maxN <= 0 {
		maxN = p.cfg.DefaultMaxInstances
	}
	concurrency = cfg.Scale.Concurrency
	if concurrency <= 0 {
		concurrency = domain.DefaultConcurrency(cfg.Runtime)
	}
	return minN, max(maxN, minN, 1), concurrency
}

// perInstanceLimit is how many requests one instance of e takes at once;
// 0 (no limit) when the Scaler cannot run more than one.
func (p *Proxy) perInstanceLimit(cfg *routeCfg) int {
	if p.scaler == nil || cfg == nil {
		return 0
	}
	_, _, c := p.limits(cfg)
	return c
}

// pick returns the least loaded instance of e with room under limit (0: no
// limit), counting the request on it; nil when all are full. e.mu is held.
func (e *entry) pick(limit int) *inst {
	var best *inst
	for _, in := range e.insts {
		if in.draining || limit > 0 && in.busy >= limit {
			continue
		}
		if best == nil || in.busy < best.busy {
			best = in
		}
	}
	if best != nil {
		best.busy++
	}
	return best
}

// done ends a request on in: its place goes to the oldest queued request,
// or is freed. e.mu is not held.
func (e *entry) done(in *inst) {
	if in == nil {
		return
	}
	e.mu.Lock()
	if len(e.queue) > 0 && !in.draining && slices.Contains(e.insts, in) {
		e.handTo(in)
	} else {
		in.busy--
	}
	e.mu.Unlock()
}

// handTo gives in, whose request ended or which has room, to the oldest
// queued request (the count stays on in). e.mu is held; the queue is not empty.
func (e *entry) handTo(in *inst) {
	ch := e.queue[0]
	e.queue = e.queue[1:]
	ch <- in // buffered, one each
}

// serveQueue hands the room of every instance to queued requests. e.mu is held.
func (e *entry) serveQueue(limit int) {
	for len(e.queue) > 0 {
		in := e.pick(limit) // counted on in, for the request handed it
		if in == nil {
			return
		}
		e.handTo(in)
	}
}

// requeue tells every queued request to look again (nil): the function went
// asleep, or its instances changed without room. e.mu is held.
func (e *entry) requeue() {
	for _, ch := range e.queue {
		ch <- nil
	}
	e.queue = nil
}

// setLive makes u the function's one instance (a wake, a rollout); nil none.
// e.mu is held.
func (e *entry) setLive(u *url.URL) {
	e.live = u
	if u == nil {
		e.insts = nil
		e.requeue()
	} else if len(e.insts) != 1 || e.insts[0].url.Host != u.Host {
		e.insts = []*inst{{url: u}}
	}
	e.ready.Store(int32(len(e.insts)))
}

// setInstances makes the endpoints a Scale returned e's instances, keeping
// the counts of those already known, and hands their room to the queue.
// e.mu is held.
func (e *entry) setInstances(endpoints []string, limit int) {
	next := make([]*inst, 0, len(endpoints))
	for _, ep := range endpoints {
		u, err := parseEndpoint(ep)
		if err != nil {
			continue
		}
		i := slices.IndexFunc(e.insts, func(in *inst) bool { return in.url.Host == u.Host && !slices.Contains(next, in) })
		if i >= 0 {
			next = append(next, e.insts[i])
		} else {
			next = append(next, &inst{url: u})
		}
	}
	if len(next) == 0 {
		return // a function is not put to sleep here: the reaper does that
	}
	e.insts, e.live = next, next[0].url
	e.ready.Store(int32(len(next)))
	e.serveQueue(limit)
}

// dropInstance forgets the instance at host (its connection was refused)
// and reports whether none is left: the function is asleep then. e.mu is held.
func (e *entry) dropInstance(host string) bool {
	e.insts = slices.DeleteFunc(e.insts, func(in *inst) bool { return in.url.Host == host })
	if len(e.insts) == 0 {
		e.state = asleep
		e.setLive(nil)
		return true
	}
	e.live = e.insts[0].url
	e.ready.Store(int32(len(e.insts)))
	return false
}

// queued waits for an instance with room, at most until deadline; e.mu is
// held and released. A nil instance and no error: look again.
func (p *Proxy) queued(ctx context.Context, e *entry, deadline time.Time) (*inst, error) {
	if len(e.queue)+e.waiting >= p.cfg.MaxWaiting {
		e.mu.Unlock()
		p.metrics.proxyErrors.WithLabelValues("overloaded").Inc()
		return nil, errQueueFull
	}
	ch := make(chan *inst, 1)
	e.queue = append(e.queue, ch)
	e.mu.Unlock()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	var err error
	select {
	case in := <-ch:
		return in, nil
	case <-ctx.Done():
		err = context.Cause(ctx)
	case <-t.C:
		err = errQueueSlow
	}
	e.mu.Lock()
	if i := slices.Index(e.queue, ch); i >= 0 {
		e.queue = slices.Delete(e.queue, i, i+1)
		e.mu.Unlock()
		return nil, err
	}
	e.mu.Unlock()
	if in := <-ch; in != nil { // handed over as it gave up
		e.done(in)
	}
	return nil, err
}

var (
	errQueueFull = domain.Errorf(domain.EUNAVAILABLE, "too many requests are waiting for an instance of the function")
	errQueueSlow = domain.Errorf(domain.EUNAVAILABLE, "no instance of the function was free in time")
	errQuota     = domain.Errorf(domain.ERATELIMITED, "the namespace runs its limit of instances; try again later")
)

// namespaceInstances counts the instances this plane runs for ns, a
// starting one included.
func (p *Proxy) namespaceInstances(ns string) int {
	n := 0
	for k, e := range p.routes.all() {
		if k.ns == ns {
			n += int(e.ready.Load())
		}
	}
	return n
}

// quotaLeft is how many more instances ns may run here; MaxInt without a quota.
func (p *Proxy) quotaLeft(ns string) int {
	if p.cfg.NamespaceMaxInstances <= 0 {
		return math.MaxInt
	}
	return p.cfg.NamespaceMaxInstances - p.namespaceInstances(ns)
}

// autoscale samples every awake function each ScaleTick and rescales those
// whose desired instances changed, until ctx ends.
func (p *Proxy) autoscale(ctx context.Context) {
	t := time.NewTicker(p.cfg.ScaleTick)
	defer t.Stop()
	size := max(int(p.cfg.StableWindow/p.cfg.ScaleTick), 1)
	panicK := max(int(p.cfg.PanicWindow/p.cfg.ScaleTick), 1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		for _, e := range p.routes.all() {
			if want, ok := p.decide(e, now, size, panicK); ok {
				go p.rescale(ctx, e, want) //nolint:errcheck // it logs
			}
		}
	}
}

// decide samples e and returns the instances it should have, and whether
// that differs from what it has and no scaling runs.
func (p *Proxy) decide(e *entry, now time.Time, size, panicK int) (int, bool) {
	cfg := e.cfg.Load()
	if cfg == nil {
		return 0, false
	}
	minN, maxN, concurrency := p.limits(cfg)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != awake {
		e.win, e.desired, e.panicUntil = nil, 0, time.Time{}
		return 0, false
	}
	if e.win == nil {
		e.win = &window{samples: make([]int32, size)}
	}
	e.win.add(int32(e.inflight.Load()))
	stableMean, panicMean := e.win.means(panicK)
	capacity := float64(concurrency) * p.cfg.TargetUtilization
	stable := int(math.Ceil(stableMean / capacity))
	panicking := int(math.Ceil(panicMean / capacity))
	ready := len(e.insts)
	if panicking >= 2*ready && panicking > ready {
		e.panicUntil = now.Add(p.cfg.StableWindow)
	}
	want := stable
	if now.Before(e.panicUntil) {
		want = max(panicking, ready) // never down while panicking
	} else if want < ready {
		want = max(want, ready/2) // gradually: at most half at a time
	}
	want = min(max(want, minN, 1), maxN)
	if grow := want - ready; grow > 0 {
		want = ready + max(min(grow, p.quotaLeft(e.key.ns)), 0)
	}
	e.desired = want
	return want, want != ready && !e.scaling && len(e.insts) > 0
}

// Rescale sets a function's instances to n now, as the autoscaler does
// (draining those it retires), and returns once they run; the autoscaler
// decides again on its next tick. Operators and tests use it.
//
// Errors: ENOTFOUND (not routed), EINVALID (n < 1, or the Scaler runs one
// instance), ECONFLICT (not running, or a rescale runs), the Scaler's.
func (p *Proxy) Rescale(ctx context.Context, namespace, function string, n int) error {
	e := p.routes.get(fnKey{namespace, function})
	switch {
	case e == nil:
		return domain.Errorf(domain.ENOTFOUND, "function %q of namespace %q is not routed", function, namespace)
	case n < 1 || p.scaler == nil:
		return domain.Errorf(domain.EINVALID, "cannot run %d instances of %q here", n, function)
	}
	return p.rescale(ctx, e, n)
}

// rescale brings e to want instances: a scale-down first drains the least
// loaded ones (no new requests; those in flight finish, up to the
// function's timeout) and retires them. Errors are logged too.
func (p *Proxy) rescale(ctx context.Context, e *entry, want int) error {
	cfg := e.cfg.Load()
	e.mu.Lock()
	if e.scaling || e.state != awake {
		e.mu.Unlock()
		return domain.Errorf(domain.ECONFLICT, "function %q is not running, or is being scaled", e.key.name)
	}
	if want == len(e.insts) {
		e.mu.Unlock()
		return nil
	}
	e.scaling, e.scaleTo = true, want
	var victims []*inst
	if n := len(e.insts) - want; n > 0 {
		byLoad := slices.Clone(e.insts)
		slices.SortStableFunc(byLoad, func(a, b *inst) int { return a.busy - b.busy })
		victims = byLoad[:n]
		for _, in := range victims {
			in.draining = true
		}
	}
	from := len(e.insts)
	e.mu.Unlock()

	timeout := time.Duration(domain.DefaultTimeoutSec) * time.Second
	if cfg != nil && cfg.TimeoutSec > 0 {
		timeout = time.Duration(cfg.TimeoutSec) * time.Second
	}
	var retire []string
	if len(victims) > 0 {
		p.drain(ctx, e, victims, timeout)
		for _, in := range victims {
			retire = append(retire, endpointOf(in.url))
		}
	}
	sctx, cancel := context.WithTimeout(ctx, p.cfg.WakeTimeout+timeout)
	start := time.Now()
	endpoints, err := p.scaler.Scale(sctx, e.key.ns, e.key.name, want, retire)
	cancel()

	e.mu.Lock()
	e.scaling = false
	if err != nil {
		for _, in := range victims {
			in.draining = false
		}
		e.mu.Unlock()
		p.metrics.proxyErrors.WithLabelValues("scale").Inc()
		p.log.Warn("scaling failed", "function", e.key.String(), "from", from, "to", want, "error", err)
		return err
	}
	if e.state == awake {
		e.setInstances(endpoints, p.perInstanceLimit(cfg))
	}
	e.mu.Unlock()
	direction := "up"
	if want < from {
		direction = "down"
	}
	p.metrics.scaled(e.m, direction)
	p.log.Info("scaled", "function", e.key.String(), "from", from, "to", len(endpoints), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// drain waits until the victims have nothing in flight, or timeout.
func (p *Proxy) drain(ctx context.Context, e *entry, victims []*inst, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		e.mu.Lock()
		busy := 0
		for _, in := range victims {
			busy += in.busy
		}
		e.mu.Unlock()
		if busy == 0 || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
