package proxy

import (
	"context"
	"net/url"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/store"
)

// Scaler starts and stops a function's active version for scale to zero.
// Idleness is runtime state, like Knative's activator keeps it: it is not in
// the event log, whose desired state (active version, enabled http trigger)
// does not change when a function sleeps.
type Scaler interface {
	// Wake runs the function's active version (idempotent: when it runs, its
	// endpoint is returned at once) and returns its endpoint once it answers.
	Wake(ctx context.Context, namespace, function string) (endpoint string, err error)
	// Sleep stops every process of the function.
	Sleep(ctx context.Context, namespace, function string) error
}

// state is where a function is in scale to zero:
//
//	awake ──idle, nothing in flight──► sleeping ──Scaler.Sleep──► asleep
//	  ▲                                                             │ request
//	  └───────────────Scaler.Wake ok─────── waking ◄────────────────┘
//	                                          │ fails: asleep, the waiting requests get 503
//
// A rollout seen in the read model (new endpoint or version) makes a
// function awake at once (one by another control plane leaves the state as
// it is: follow); a dial failure to an awake function makes it asleep
// and the request that saw it waits for a wake (once).
type state uint8

const (
	asleep state = iota
	waking
	awake
	sleeping
)

func (s state) String() string {
	return [...]string{"asleep", "waking", "awake", "sleeping"}[s]
}

// Reasons a request gets no upstream, rendered as 503 (429 for errClientRate).
var (
	errClientRate = domain.Errorf(domain.ERATELIMITED, "too many requests from this client")
	errNotRunning = domain.Errorf(domain.EUNAVAILABLE, "the function is not running")
	errOverloaded = domain.Errorf(domain.EUNAVAILABLE, "too many requests are waiting for the function to start")
	errWakeSlow   = domain.Errorf(domain.EUNAVAILABLE, "the function did not start in time")
)

// acquire returns the instance to send a request to, which the caller has
// counted in flight, with the request counted on it (e.done ends that), and
// whether it waited for a cold start. Requests that find the function
// asleep (or going to sleep, or not yet started by its rollout) wait, at
// most MaxWaiting of them and at most wait, while a single Scaler.Wake runs
// for all of them; requests that find every instance full queue for one as
// long. The caller calls release in any case.
func (p *Proxy) acquire(ctx context.Context, e *entry, wait time.Duration) (*inst, bool, error) {
	return p.await(ctx, e, wait)
}

func (p *Proxy) release(e *entry) {
	e.lastUsed.Store(time.Now().UnixNano())
	e.inflight.Add(-1)
}

// await waits, at most wait, until e is awake with an instance with room
// and returns it. The request is counted in flight before, so a sleep
// decided after that sees it, and one decided before makes await wait for
// it to end and wake e.
func (p *Proxy) await(ctx context.Context, e *entry, wait time.Duration) (*inst, bool, error) {
	cold := false
	var deadline time.Time
	limit := p.perInstanceLimit(e.cfg.Load())
	e.mu.Lock()
	for {
		switch e.state {
		case awake:
			if in := e.pick(limit); in != nil {
				e.mu.Unlock()
				return in, cold, nil
			}
			if deadline.IsZero() {
				deadline = time.Now().Add(wait)
			}
			in, err := p.queued(ctx, e, deadline)
			if in != nil || err != nil {
				return in, cold, err
			}
			e.mu.Lock()
			continue
		case asleep:
			if p.cfg.Scaler == nil {
				e.mu.Unlock()
				return nil, cold, errNotRunning
			}
			if p.quotaLeft(e.key.ns) < 1 {
				e.mu.Unlock()
				return nil, cold, errQuota
			}
			p.startWake(e)
		}
		if e.waiting >= p.cfg.MaxWaiting {
			e.mu.Unlock()
			p.metrics.proxyErrors.WithLabelValues("overloaded").Inc()
			return nil, cold, errOverloaded
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(wait)
		}
		forWake := e.state == waking
		ch := e.change
		e.waiting++
		e.mu.Unlock()
		cold = true
		err := waitClosed(ctx, ch, deadline)
		e.mu.Lock()
		e.waiting--
		if err != nil {
			e.mu.Unlock()
			return nil, cold, err
		}
		if forWake && e.state == asleep { // the wake we waited for failed
			err := e.wakeErr
			e.mu.Unlock()
			return nil, cold, err
		}
	}
}

// waitClosed waits for ch to close, ctx to end or the deadline to pass.
func waitClosed(ctx context.Context, ch <-chan struct{}, deadline time.Time) error {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return errWakeSlow
	}
}

// startWake starts the one Scaler.Wake for e; e.mu is held and e is asleep.
// The wake has its own deadline and is not tied to any request: a caller
// that gives up does not cancel the start for the others.
func (p *Proxy) startWake(e *entry) {
	e.state = waking
	e.ready.Store(1)
	ch := make(chan struct{})
	e.change = ch
	go func() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(p.ctx(), p.cfg.WakeTimeout)
		defer cancel()
		endpoint, err := p.cfg.Scaler.Wake(ctx, e.key.ns, e.key.name)
		var u *url.URL
		if err == nil {
			u, err = parseEndpoint(endpoint)
		}
		took := time.Since(start)
		e.mu.Lock()
		if err != nil {
			e.state = asleep
			e.setLive(nil)
			e.wakeErr = wakeError(e.key.name, err)
		} else {
			e.state, e.wakeErr = awake, nil
			e.setLive(u)
			e.lastUsed.Store(time.Now().UnixNano())
		}
		close(ch)
		e.mu.Unlock()
		if err != nil {
			p.metrics.proxyErrors.WithLabelValues("wake").Inc()
			p.log.Error("cold start failed", "function", e.key.String(), "took", took, "error", err)
			return
		}
		p.metrics.coldStart(e.m, took)
		p.log.Info("cold start", "function", e.key.String(), "took", took, "endpoint", endpoint)
	}()
}

// follow makes this plane's awake instance of e follow a rollout another
// control plane did (its endpoint is foreign, see endpointOwner): a
// Scaler.Wake in the background, which keeps the instance when it runs the
// active version already and otherwise starts that version here (the
// driver stops the old one after draining it). Requests go on to the old
// instance meanwhile and to the new one once it answers. e.mu is held.
func (p *Proxy) follow(e *entry) {
	if e.following {
		e.followAgain = true
		return
	}
	e.following = true
	go func() {
		for {
			ctx, cancel := context.WithTimeout(p.ctx(), p.cfg.WakeTimeout)
			endpoint, err := p.cfg.Scaler.Wake(ctx, e.key.ns, e.key.name)
			cancel()
			var u *url.URL
			if err == nil {
				u, err = parseEndpoint(endpoint)
			}
			e.mu.Lock()
			moved := err == nil && e.state == awake && e.live.Host != u.Host // else a wake or sleep decides
			if moved {
				e.setLive(u)
			}
			again := e.followAgain
			e.followAgain, e.following = false, again
			e.mu.Unlock()
			switch {
			case err != nil:
				p.log.Warn("cannot run the version another control plane rolled out; the running one serves on", "function", e.key.String(), "error", err)
			case moved:
				p.log.Info("running the version another control plane rolled out", "function", e.key.String(), "endpoint", endpoint)
			}
			if !again {
				return
			}
		}
	}()
}

// wakeError is what waiting callers are told: that the function could not
// be started. Why — the user's start failure (EUNPROCESSABLE) comes with its
// stderr, tracebacks and paths of the host — is the function owner's to read,
// in the invocation record.
func wakeError(function string, err error) error {
	public := domain.Errorf(domain.EUNAVAILABLE, "function %q could not be started", function)
	if domain.ErrorCode(err) == domain.EUNPROCESSABLE {
		public = domain.Errorf(domain.EUNAVAILABLE, "function %q failed to start", function)
	}
	return &hidden{public: public, detail: public.Message + ": " + domain.ErrorMessage(err)}
}

// rewake handles a dial failure to an instance of an awake function (it was
// stopped or restarted behind the proxy's back): the instance is forgotten
// (unless another request did so already) and, when none is left, the
// function is marked asleep; the caller waits for another instance or a
// wake like a cold start. The request stays counted in flight; its count
// on the failed instance ends here. cold says whether it waited for a start.
func (p *Proxy) rewake(ctx context.Context, e *entry, failed *inst) (in *inst, cold bool, err error) {
	e.mu.Lock()
	failed.busy--
	if e.state == awake {
		e.dropInstance(failed.url.Host)
	}
	e.mu.Unlock()
	return p.await(ctx, e, p.cfg.WakeTimeout)
}

// sleepIfIdle stops e when it is awake, has nothing in flight and was idle
// for its idle period (or at all, with force), and reports whether it did.
// Idle means idle on every replica: the invocation log is asked whether
// another one served the function meanwhile.
func (p *Proxy) sleepIfIdle(e *entry, force bool) (bool, error) {
	cfg := e.cfg.Load()
	eligible := func() bool {
		idleFor := time.Since(time.Unix(0, e.lastUsed.Load()))
		return p.cfg.Scaler != nil && cfg != nil && e.state == awake && e.inflight.Load() == 0 && !e.scaling &&
			(force || cfg.idle > 0 && idleFor >= cfg.idle && cfg.Scale.MinInstances == 0)
	}
	e.mu.Lock()
	ok := eligible()
	e.mu.Unlock()
	if !ok {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(p.ctx(), p.cfg.WakeTimeout)
	defer cancel()
	if !force {
		end, err := p.cfg.Store.LastInvocationEnd(ctx, e.key.ns, e.key.name, time.Now().Add(-cfg.idle-time.Hour),
			store.InvocationHTTP, store.InvocationAPI)
		if err != nil {
			p.log.Warn("scale to zero: cannot read the invocation log; trying later", "function", e.key.String(), "error", err)
			return false, nil
		}
		if time.Since(end) < cfg.idle {
			if end.UnixNano() > e.lastUsed.Load() {
				e.lastUsed.Store(end.UnixNano()) // served elsewhere: idle from then on
			}
			return false, nil
		}
	}

	e.mu.Lock()
	if !eligible() { // a request came meanwhile
		e.mu.Unlock()
		return false, nil
	}
	idleFor := time.Since(time.Unix(0, e.lastUsed.Load()))
	e.state = sleeping
	ch := make(chan struct{})
	e.change = ch
	e.mu.Unlock()

	err := p.cfg.Scaler.Sleep(ctx, e.key.ns, e.key.name)
	// Asleep even when Sleep failed: the next request wakes it, and Wake of
	// a function that still runs returns its endpoint.
	e.mu.Lock()
	e.state = asleep
	e.setLive(nil)
	close(ch)
	e.mu.Unlock()
	if err != nil {
		p.log.Warn("scale to zero failed", "function", e.key.String(), "error", err)
		return true, err
	}
	p.log.Info("scaled to zero", "function", e.key.String(), "idle", idleFor.Round(time.Millisecond))
	return true, nil
}

// reap puts idle functions to sleep, checking every reapInterval.
func (p *Proxy) reap(ctx context.Context) {
	t := time.NewTicker(p.reapInterval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, e := range p.routes.all() {
			if e.cfg.Load().idle <= 0 {
				continue
			}
			if e.reaping.CompareAndSwap(false, true) {
				go func() {
					defer e.reaping.Store(false)
					_, _ = p.sleepIfIdle(e, false) // logged inside
				}()
			}
		}
		p.up.closeIdle(upstreamIdle)
	}
}

// reapInterval is a quarter of the shortest idle period, within 10 ms to 15 s.
func (p *Proxy) reapInterval() time.Duration {
	shortest := p.cfg.IdleTimeout
	for _, d := range p.cfg.IdleTimeouts {
		if d > 0 && (shortest <= 0 || d < shortest) {
			shortest = d
		}
	}
	if shortest <= 0 {
		return 15 * time.Second
	}
	return min(max(shortest/4, 10*time.Millisecond), 15*time.Second)
}

// Sleep scales a function to zero now, unless requests are in flight
// (ECONFLICT) or it is not running (nothing to do). Operators and benchmarks
// use it; idle functions go to sleep by themselves.
//
// Errors: ENOTFOUND (not in the route table), ECONFLICT, and the Scaler's errors.
func (p *Proxy) Sleep(ctx context.Context, namespace, function string) error {
	e := p.routes.get(fnKey{namespace, function})
	if e == nil {
		return domain.Errorf(domain.ENOTFOUND, "function %q of namespace %q is not routed", function, namespace)
	}
	if e.inflight.Load() != 0 {
		return domain.Errorf(domain.ECONFLICT, "function %q has requests in flight", function)
	}
	_, err := p.sleepIfIdle(e, true)
	return err
}

// exitReasoner is implemented by a Scaler whose driver can say why the
// process behind an endpoint ended (the local driver: "out of memory
// (128 MiB)"), so that the invocation log says why a request got no answer.
type exitReasoner interface {
	// ExitReason waits, until ctx ends, for the process behind endpoint to
	// have ended, and says how; "" when it did not end or is unknown.
	ExitReason(ctx context.Context, endpoint string) string
}

// endpointOwner is implemented by a Scaler whose driver runs a function's
// processes per control plane (the local driver: processes on this host,
// serving on its sockets), so that the endpoint another plane's rollout
// recorded is not one this plane can use. The Kubernetes driver's endpoints
// serve every plane; it does not implement it.
type endpointOwner interface {
	// OwnsEndpoint reports whether endpoint is served by this plane's driver.
	OwnsEndpoint(endpoint string) bool
}

// planeStopper is implemented by a Scaler that can say whether its driver
// runs a function's processes per control plane (endpointOwner) and stop
// them on this one. Another plane's worker stops what that plane runs when
// a function is deleted or stopped; what this plane started for its own
// requests (a foreign endpoint) only this plane can stop.
type planeStopper interface {
	// PerPlane reports whether the driver's processes are this plane's own.
	PerPlane() bool
	// StopHere removes what this plane runs of a deleted function.
	StopHere(ctx context.Context, namespace, function string) error
}

// exitReasonWait bounds how long a failed request waits to learn why its
// function's process ended: the proxy sees the connection break about when
// the driver sees the process exit.
const exitReasonWait = 500 * time.Millisecond

// exitReason returns why the process behind target ended, or "".
func (p *Proxy) exitReason(target *url.URL) string {
	er, ok := p.cfg.Scaler.(exitReasoner)
	if !ok {
		return ""
	}
	endpoint := endpointOf(target)
	ctx, cancel := context.WithTimeout(context.Background(), exitReasonWait)
	defer cancel()
	return er.ExitReason(ctx, endpoint)
}

// DriverScaler is a Scaler that runs a function's active version through a
// driver.Driver: Wake is Deploy with one replica, Sleep Deploy with none.
// It reads the active version from the read model (one query per start or
// stop, never per request).
type DriverScaler struct {
	Driver driver.Driver
	Store  *store.Store
}

var (
	_ Scaler         = DriverScaler{}
	_ endpointOwner  = DriverScaler{}
	_ planeStopper   = DriverScaler{}
	_ instanceScaler = DriverScaler{}
)

// Wake deploys the active version with one replica and returns its endpoint.
// Errors: ENOTFOUND, EUNPROCESSABLE (no built active version; it cannot
// start), and the driver's.
func (s DriverScaler) Wake(ctx context.Context, namespace, function string) (string, error) {
	w, err := s.workload(ctx, namespace, function)
	if err != nil {
		return "", err
	}
	return s.Driver.Deploy(ctx, driver.Deployment{Workload: w, Replicas: 1})
}

// Sleep deploys the active version with no replicas.
// Errors: ENOTFOUND, EUNPROCESSABLE, and the driver's.
func (s DriverScaler) Sleep(ctx context.Context, namespace, function string) error {
	w, err := s.workload(ctx, namespace, function)
	if err != nil {
		return err
	}
	_, err = s.Driver.Deploy(ctx, driver.Deployment{Workload: w, Replicas: 0})
	return err
}

// Scale runs n instances of the active version through Driver.Scale,
// retiring the named ones first, and returns the ready ones' endpoints.
// Errors: those of Wake.
func (s DriverScaler) Scale(ctx context.Context, namespace, function string, n int, retire []string) ([]string, error) {
	w, err := s.workload(ctx, namespace, function)
	if err != nil {
		return nil, err
	}
	return s.Driver.Scale(ctx, driver.Deployment{Workload: w, Replicas: n, Retire: retire})
}

// ExitReason asks the driver why the process behind endpoint ended, when
// it can say (see exitReasoner).
func (s DriverScaler) ExitReason(ctx context.Context, endpoint string) string {
	if er, ok := s.Driver.(exitReasoner); ok {
		return er.ExitReason(ctx, endpoint)
	}
	return ""
}

// OwnsEndpoint asks the driver whether endpoint is one it serves, when it
// can say (see endpointOwner); true when it cannot.
func (s DriverScaler) OwnsEndpoint(endpoint string) bool {
	if o, ok := s.Driver.(endpointOwner); ok {
		return o.OwnsEndpoint(endpoint)
	}
	return true
}

// PerPlane reports whether the driver runs processes per control plane:
// whether it says which endpoints are its own (see endpointOwner).
func (s DriverScaler) PerPlane() bool {
	_, ok := s.Driver.(endpointOwner)
	return ok
}

// StopHere removes what this plane's driver runs of a deleted function
// (Driver.Remove), when it runs processes per plane; nothing otherwise.
func (s DriverScaler) StopHere(ctx context.Context, namespace, function string) error {
	if !s.PerPlane() {
		return nil
	}
	return s.Driver.Remove(ctx, namespace, function)
}

// workload is what domain.Function.Runnable picks, read from the read model:
// the active version, when its build succeeded. The function's row has no
// Versions, so the active one is fetched and CanRun, Runnable's rule, asked.
func (s DriverScaler) workload(ctx context.Context, ns, name string) (driver.Workload, error) {
	f, err := s.Store.GetFunction(ctx, ns, name)
	if err != nil {
		return driver.Workload{}, err
	}
	if f.ActiveVersion == 0 {
		return driver.Workload{}, domain.Errorf(domain.EUNPROCESSABLE, "function %q has no active version", name)
	}
	v, err := s.Store.GetVersion(ctx, ns, name, f.ActiveVersion)
	if err != nil {
		return driver.Workload{}, err
	}
	if !f.CanRun(v) {
		return driver.Workload{}, domain.Errorf(domain.EUNPROCESSABLE, "version %d of %q is not built (%s)", v.Number, name, v.BuildStatus)
	}
	cfg := v.Config
	cfg.Scale = f.Config.Scale // the function's, not the version's
	return driver.Workload{Namespace: ns, Function: name, Version: v.Number, Image: v.Image, Config: cfg}, nil
}
