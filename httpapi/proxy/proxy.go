package proxy

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/invoke"
	"github.com/slessio/sless/store"
)

// Defaults of Config.
const (
	DefaultIdleTimeout     = 10 * time.Minute
	DefaultMaxBodyBytes    = 6 << 20 // the request payload limit of AWS Lambda
	DefaultWakeTimeout     = 30 * time.Second
	DefaultMaxWaiting      = 1000
	DefaultRefreshInterval = time.Minute
	DefaultMaxConns        = 32
	// upstreamIdle is how long an idle connection to a function is kept:
	// shorter than the runtimes keep theirs (Node.js 120 s, Go and Python
	// without limit), so the proxy closes first.
	upstreamIdle = time.Minute
	// Prefix is the path below which functions are served: /fn/{ns}/{name}/...
	Prefix = "/fn/"
)

// Recorder takes invocation records without blocking (a
// *store.InvocationWriter); it returns false when it dropped one.
type Recorder interface {
	Record(inv store.Invocation) bool
}

// Config wires a Proxy.
type Config struct {
	// Store reads the routes and announces their changes. Required.
	Store *store.Store
	// Invocations receives a record of every request to a known function;
	// nil records nothing.
	Invocations Recorder
	// Scaler starts and stops functions for scale to zero; nil never stops a
	// function (and a function found not running answers 503).
	Scaler Scaler
	// IdleTimeout is how long a function may go without requests before it
	// is stopped (10 min); negative: never.
	IdleTimeout time.Duration
	// IdleTimeouts overrides IdleTimeout per function, keyed "<ns>/<name>";
	// 0 or negative: never stopped.
	IdleTimeouts map[string]time.Duration
	// MaxBodyBytes caps a request body (6 MiB): 413 beyond it.
	MaxBodyBytes int64
	// WakeTimeout bounds a cold start and how long requests wait for it (30 s).
	WakeTimeout time.Duration
	// MaxWaiting bounds the requests one function holds during a cold start
	// (1,000); more get 503 at once.
	MaxWaiting int
	// MaxConnsPerFunction bounds the connections to one function process
	// (32): the requests beyond it wait for one, within the function's timeout.
	MaxConnsPerFunction int
	// DefaultMaxConcurrency bounds the requests one function has in flight on
	// this proxy (being proxied or waiting for it to start) when the function
	// sets no max_concurrency; beyond it they get 429. 0: unlimited.
	DefaultMaxConcurrency int
	// ClientRate is the requests per second one client address may send to
	// /fn (a token bucket per IPv4 address or IPv6 /64, the client found as
	// for X-Forwarded-For); beyond it 429. 0: no limit.
	ClientRate float64
	// ClientBurst is the bucket size of ClientRate: the requests a client
	// may send at once (default: ClientRate rounded up, at least 1).
	ClientBurst int
	// PlatformToken reports whether an Authorization header value is a
	// Bearer token of the sless API itself; such a header is removed before
	// the request reaches the function (any other is passed). It is called
	// only for requests with an Authorization header; nil passes them all.
	PlatformToken func(authorization string) bool
	// RefreshInterval is the period of the full route refresh that backs up
	// the notifications (1 min).
	RefreshInterval time.Duration
	// TrustedProxies are the peers (a load balancer, an ingress) whose
	// X-Forwarded-For, -Proto and -Host are kept and extended; from anyone
	// else they are replaced. Empty: trust no one.
	TrustedProxies []netip.Prefix
	// Enqueue accepts asynchronous invocations (X-Sless-Invocation-Type:
	// async, and /async-fn/); nil answers them 503.
	Enqueue Enqueuer
	// DefaultMaxInstances is the max_instances of a function that sets none
	// (10); NamespaceMaxInstances caps the instances of one namespace's
	// functions on this proxy (0: no cap): a function that would start
	// beyond it gets 429, and scaling stops at it.
	DefaultMaxInstances   int
	NamespaceMaxInstances int
	// StableWindow and PanicWindow are the autoscaler's windows (60 s, 6 s),
	// ScaleTick how often it samples and decides (PanicWindow / 12, at least
	// 10 ms), TargetUtilization the share of an instance's concurrency it
	// aims at (0.7). See instances.go.
	StableWindow, PanicWindow, ScaleTick time.Duration
	TargetUtilization                    float64
	// Registerer receives the proxy's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Proxy serves /fn/{ns}/{name}/... from an in-memory route table. Create it
// with New, load the table with Start, and mount it (it is an http.Handler)
// in front of the API router.
type Proxy struct {
	cfg     Config
	log     *slog.Logger
	routes  table
	up      *upstream
	metrics *metrics
	clients *clientLimiter // nil without Config.ClientRate
	owner   endpointOwner  // the Scaler, when it says which endpoints are this plane's
	stopper planeStopper   // the Scaler, when its driver's processes are this plane's own
	scaler  instanceScaler // the Scaler, when it runs several instances of a function

	lifeMu sync.Mutex
	life   context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Proxy for cfg with an empty route table.
// It returns EINVALID without a Store.
func New(cfg Config) (*Proxy, error) {
	if cfg.Store == nil {
		return nil, domain.Errorf(domain.EINVALID, "proxy: Config.Store is required")
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.WakeTimeout <= 0 {
		cfg.WakeTimeout = DefaultWakeTimeout
	}
	if cfg.MaxWaiting <= 0 {
		cfg.MaxWaiting = DefaultMaxWaiting
	}
	if cfg.MaxConnsPerFunction <= 0 {
		cfg.MaxConnsPerFunction = DefaultMaxConns
	}
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = DefaultRefreshInterval
	}
	if cfg.DefaultMaxConcurrency < 0 {
		cfg.DefaultMaxConcurrency = 0
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DefaultMaxInstances <= 0 {
		cfg.DefaultMaxInstances = DefaultMaxInstances
	}
	if cfg.StableWindow <= 0 {
		cfg.StableWindow = DefaultStableWindow
	}
	if cfg.PanicWindow <= 0 {
		cfg.PanicWindow = DefaultPanicWindow
	}
	cfg.PanicWindow = min(cfg.PanicWindow, cfg.StableWindow)
	if cfg.ScaleTick <= 0 {
		cfg.ScaleTick = max(cfg.PanicWindow/12, 10*time.Millisecond)
	}
	if cfg.TargetUtilization <= 0 || cfg.TargetUtilization > 1 {
		cfg.TargetUtilization = DefaultTargetUtilization
	}
	m, err := newMetrics(cfg.Registerer, cfg.Invocations)
	if err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, log: cfg.Logger, metrics: m, up: newUpstream(cfg.MaxConnsPerFunction, upstreamIdle)}
	p.owner, _ = cfg.Scaler.(endpointOwner)
	p.scaler, _ = cfg.Scaler.(instanceScaler)
	if err := register(cfg.Registerer, scaleCollector{p}); err != nil {
		return nil, err
	}
	if ps, ok := cfg.Scaler.(planeStopper); ok && ps.PerPlane() {
		p.stopper = ps
	}
	if cfg.ClientRate > 0 {
		p.clients = newClientLimiter(cfg.ClientRate, cfg.ClientBurst)
	}
	return p, nil
}

// Start loads the route table and keeps it fresh (LISTEN on
// store.RoutesChannel, a full refresh every RefreshInterval), and starts
// putting idle functions to sleep, until ctx ends or Close. It returns when
// the table is loaded.
//
// Errors: EUNAVAILABLE, EINTERNAL (the first load failed; nothing was started).
func (p *Proxy) Start(ctx context.Context) error {
	if err := p.refreshAll(ctx); err != nil {
		return err
	}
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	p.life, p.stop = life, stop
	context.AfterFunc(ctx, stop)
	p.wg.Add(2)
	go func() { defer p.wg.Done(); p.listen(life) }()
	go func() { defer p.wg.Done(); p.reap(life) }()
	if p.scaler != nil {
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.autoscale(life) }()
	}
	return nil
}

// Close stops refreshing the table and putting functions to sleep, and waits
// for that (up to ctx). Functions keep running; requests are still served
// from the table as it was.
func (p *Proxy) Close(ctx context.Context) error {
	p.lifeMu.Lock()
	stop := p.stop
	p.lifeMu.Unlock()
	if stop != nil {
		stop()
	}
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ctx is the proxy's lifetime: wakes and sleeps run in it.
func (p *Proxy) ctx() context.Context {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if p.life == nil {
		return context.Background()
	}
	return p.life
}

// RouteState is what the proxy knows about one function right now.
type RouteState struct {
	store.Route
	State    string // asleep, waking, awake or sleeping (see the package doc)
	Awake    bool   // running, as far as the proxy knows
	Live     string // where requests go while awake
	InFlight int64  // requests admitted: being proxied or waiting for a start
	Waiting  int    // requests held for a cold start
	ScaleState
}

// ScaleState is what runs of a function now.
type ScaleState struct {
	Ready    int // instances serving
	Starting int // instances being started: 1 during a cold start, the missing ones during a scale-up
	Desired  int // instances the autoscaler wants (Ready when it has not decided)
	Queued   int // requests waiting for an instance with room or for a start
}

// scaleState reads e's instances.
func (e *entry) scaleState() ScaleState {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := ScaleState{Ready: len(e.insts), Desired: e.desired, Queued: len(e.queue) + e.waiting}
	if st.Desired == 0 {
		st.Desired = st.Ready
	}
	switch {
	case e.state == waking:
		st.Starting = 1
	case e.scaling && e.scaleTo > st.Ready:
		st.Starting = e.scaleTo - st.Ready
	}
	return st
}

// Lookup returns the state of one function in the route table.
func (p *Proxy) Lookup(namespace, function string) (RouteState, bool) {
	e := p.routes.get(fnKey{namespace, function})
	if e == nil {
		return RouteState{}, false
	}
	st := RouteState{InFlight: e.inflight.Load(), ScaleState: e.scaleState()}
	if cfg := e.cfg.Load(); cfg != nil {
		st.Route = cfg.Route
	}
	e.mu.Lock()
	st.State, st.Awake, st.Waiting = e.state.String(), e.state == awake, e.waiting
	if e.live != nil {
		st.Live = endpointOf(e.live)
	}
	e.mu.Unlock()
	return st, true
}

// Instances says what runs of a function now (httpapi.FunctionProxy); nil
// when the route table does not have it.
func (p *Proxy) Instances(namespace, function string) *wire.Instances {
	e := p.routes.get(fnKey{namespace, function})
	if e == nil {
		return nil
	}
	st := e.scaleState()
	return &wire.Instances{Ready: st.Ready, Desired: st.Desired, InFlight: int(e.inflight.Load())}
}

// Record counts a run of a function (cron, job) in the metrics and passes
// it to Config.Invocations, so that every invocation is in one log and one
// set of metrics; it reports whether the record was queued. A function the
// route table does not know (deleted meanwhile) gets no metrics, which would
// stay forever, but its record is kept. A run the platform interrupted
// (invoke.StatusInterrupted) is not the function's error.
func (p *Proxy) Record(inv store.Invocation) bool {
	if e := p.routes.get(fnKey{inv.Namespace, inv.Function}); e != nil {
		reason := ""
		if inv.Status == invoke.StatusInterrupted {
			reason = "interrupted"
		}
		p.metrics.observe(e.m, inv.Trigger, inv.Status, reason, inv.Duration)
	}
	return p.record(inv)
}

func (p *Proxy) record(inv store.Invocation) bool {
	if p.cfg.Invocations == nil {
		return true
	}
	return p.cfg.Invocations.Record(inv)
}

// trusted reports whether the peer at remoteAddr may set X-Forwarded-*.
func (p *Proxy) trusted(remoteAddr string) bool {
	if len(p.cfg.TrustedProxies) == 0 {
		return false
	}
	return p.trustedAddr(peerAddr(remoteAddr))
}

// trustedAddr reports whether ip is in TrustedProxies.
func (p *Proxy) trustedAddr(ip netip.Addr) bool {
	for _, pfx := range p.cfg.TrustedProxies {
		if pfx.Contains(ip) {
			return true
		}
	}
	return false
}

// peerAddr is the address of a request's RemoteAddr ("host:port"); the zero
// Addr when it is not one.
func peerAddr(remoteAddr string) netip.Addr {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return ip.Unmap()
}

var _ http.Handler = (*Proxy)(nil)
