package proxy

import (
	"context"
	"maps"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// fnKey names a function across namespaces; a struct key costs no allocation
// on lookup.
type fnKey struct{ ns, name string }

func (k fnKey) String() string { return k.ns + "/" + k.name }

// routeCfg is a function's route as the read model says, with what the
// proxy derives from it once.
type routeCfg struct {
	store.Route
	target *url.URL // the read model's endpoint; nil when nothing runs, or it is foreign
	// foreign: the endpoint is another control plane's (see endpointOwner);
	// the function is started on this one for a request.
	foreign bool
	idle    time.Duration // scale to zero after this long without requests; 0: never
}

// entry is one function in the route table: its route and its runtime state
// (awake or not, requests in flight), which outlive route refreshes.
type entry struct {
	key    fnKey
	prefix string // /fn/{ns}/{name}, for X-Forwarded-Prefix
	cfg    atomic.Pointer[routeCfg]
	m      *fnMetrics

	mu      sync.Mutex
	state   state
	live    *url.URL     // the first instance while awake
	insts   []*inst      // the ready instances while awake (instances.go)
	queue   []chan *inst // requests waiting for an instance with room, oldest first
	scaling bool         // a rescale runs
	scaleTo int          // the instances it aims at, while scaling
	desired int          // the instances the autoscaler wants
	win     *window      // in-flight samples while awake
	// panicUntil: the autoscaler is in panic mode until then.
	panicUntil time.Time
	ready      atomic.Int32  // len(insts), or 1 while waking: for the namespace quota
	change     chan struct{} // closed when the running wake or sleep ends
	wakeErr    error         // why the last wake failed

	waiting int // requests held for a wake; under mu
	// following: a follow runs; followAgain: another plane's rollout came
	// while it ran, so it runs once more. Under mu.
	following, followAgain bool
	inflight               atomic.Int64 // requests being proxied
	lastUsed               atomic.Int64 // unix nanos: last request end, or last wake
	reaping                atomic.Bool  // an idle check runs
}

// table is the route table: a map replaced whole (copy on write) when a
// function appears or goes, read without locks on every request.
type table struct {
	m  atomic.Pointer[map[fnKey]*entry]
	mu sync.Mutex // serializes refreshes: read and apply as one step
}

func (t *table) get(k fnKey) *entry {
	if m := t.m.Load(); m != nil {
		return (*m)[k]
	}
	return nil
}

func (t *table) all() map[fnKey]*entry {
	if m := t.m.Load(); m != nil {
		return *m
	}
	return nil
}

// refreshAll reads every route and applies them; functions gone from the
// read model leave the table. t.mu is held over the read, so a slower
// refresh cannot apply older data over a newer one.
func (p *Proxy) refreshAll(ctx context.Context) error {
	p.routes.mu.Lock()
	defer p.routes.mu.Unlock()
	rs, err := p.cfg.Store.ListRoutes(ctx)
	if err != nil {
		return err
	}
	old := p.routes.all()
	next := make(map[fnKey]*entry, len(rs))
	for _, r := range rs {
		k := fnKey{r.Namespace, r.Function}
		e := old[k]
		if e == nil {
			e = p.newEntry(k)
		}
		p.apply(e, r)
		next[k] = e
	}
	p.routes.m.Store(&next)
	for k, e := range old {
		if _, ok := next[k]; !ok {
			p.metrics.forget(e.m)
			p.dropped(e)
		}
	}
	return nil
}

// refreshSome reads, in one query, and applies the routes of the functions
// keys names: a function no longer found leaves the table.
func (p *Proxy) refreshSome(ctx context.Context, keys []fnKey) error {
	p.routes.mu.Lock()
	defer p.routes.mu.Unlock()
	nss, names := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		nss[i], names[i] = k.ns, k.name
	}
	rs, err := p.cfg.Store.GetRoutes(ctx, nss, names)
	if err != nil {
		return err
	}
	old := p.routes.all()
	var next map[fnKey]*entry // a copy of old, made once, when the set of functions changes
	change := func() {
		if next == nil {
			next = maps.Clone(old)
			if next == nil {
				next = map[fnKey]*entry{}
			}
		}
	}
	found := make(map[fnKey]bool, len(rs))
	for _, r := range rs {
		k := fnKey{r.Namespace, r.Function}
		found[k] = true
		if e := old[k]; e != nil {
			p.apply(e, r)
			continue
		}
		e := p.newEntry(k)
		p.apply(e, r)
		change()
		next[k] = e
	}
	for _, k := range keys {
		if e, ok := old[k]; ok && !found[k] {
			change()
			delete(next, k)
			p.metrics.forget(e.m)
			p.dropped(e)
		}
	}
	if next != nil {
		p.routes.m.Store(&next)
	}
	return nil
}

func (p *Proxy) newEntry(k fnKey) *entry {
	e := &entry{key: k, prefix: Prefix + k.ns + "/" + k.name, state: asleep, m: p.metrics.function(k)}
	e.lastUsed.Store(time.Now().UnixNano())
	return e
}

// apply installs route r in e. A new endpoint or version means a rollout
// ran the function (again): it is awake there, whatever the proxy believed.
// An endpoint that went away (trigger disabled, rollout failed) leaves it asleep.
//
// An endpoint of another control plane (the Scaler says it is not its own:
// the local driver's processes are per plane) is used as none: the function
// is started here for a request, and the instance this plane runs stays
// where requests go; it follows the rollout (follow), in case it brought
// another version.
func (p *Proxy) apply(e *entry, r store.Route) {
	cfg := &routeCfg{Route: r, idle: p.idleFor(e.key)}
	if r.Endpoint != "" {
		u, err := parseEndpoint(r.Endpoint)
		switch {
		case err != nil:
			p.log.Warn("ignoring a malformed function endpoint", "function", e.key.String(), "endpoint", r.Endpoint, "error", err)
		case p.owner != nil && !p.owner.OwnsEndpoint(r.Endpoint):
			cfg.foreign = true
		default:
			cfg.target = u
		}
	}
	old := e.cfg.Swap(cfg)
	if old != nil && old.Endpoint == r.Endpoint && old.ActiveVersion == r.ActiveVersion {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state == waking || e.state == sleeping {
		return // the running transition decides; a wake returns the driver's endpoint
	}
	switch {
	case cfg.target != nil:
		e.state = awake
		e.setLive(cfg.target)
		e.lastUsed.Store(time.Now().UnixNano())
	case cfg.foreign && e.state == awake:
		p.follow(e)
	case cfg.foreign:
		// Asleep: the next request starts the active version here.
	case p.stopper != nil && e.state == awake:
		// Stopped (a trigger disabled, a failed rollout) by a worker, maybe
		// another plane's: what this plane runs stops too, once nothing is
		// in flight (else its idle period does it).
		go p.sleepIfIdle(e, true) //nolint:errcheck // it logs
	default:
		e.state = asleep
		e.setLive(nil)
	}
}

// dropped stops what this plane runs of e, a function gone from the read
// model (deleted), when its driver's processes are this plane's own: the
// worker that removed it may be another plane's.
func (p *Proxy) dropped(e *entry) {
	if p.stopper == nil {
		return
	}
	e.mu.Lock()
	running := e.state != asleep
	e.state = asleep
	e.setLive(nil)
	e.mu.Unlock()
	if !running {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(p.ctx(), p.cfg.WakeTimeout)
		defer cancel()
		if err := p.stopper.StopHere(ctx, e.key.ns, e.key.name); err != nil {
			p.log.Warn("cannot stop a deleted function on this plane", "function", e.key.String(), "error", err)
		}
	}()
}

// idleFor is the idle period of a function: its override, else the default.
func (p *Proxy) idleFor(k fnKey) time.Duration {
	if d, ok := p.cfg.IdleTimeouts[k.String()]; ok {
		return max(d, 0)
	}
	return max(p.cfg.IdleTimeout, 0)
}

// parseEndpoint accepts absolute http(s) URLs without user info, and
// "unix:/path" of a Unix socket (the local driver's functions), which it
// returns with the socket's path as Host (what the connection pool keys on).
func parseEndpoint(s string) (*url.URL, error) {
	if path, ok := strings.CutPrefix(s, unixScheme+":"); ok {
		if !strings.HasPrefix(path, "/") {
			return nil, domain.Errorf(domain.EINVALID, "endpoint %q is not the absolute path of a socket", s)
		}
		return &url.URL{Scheme: unixScheme, Host: path}, nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, err
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.User != nil:
		return nil, domain.Errorf(domain.EINVALID, "endpoint %q is not an http(s) URL of a host", s)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// unixScheme marks the endpoint of a function served on a Unix socket.
const unixScheme = "unix"

// endpointOf writes a parsed endpoint back as the driver gave it.
func endpointOf(u *url.URL) string {
	if u.Scheme == unixScheme {
		return unixScheme + ":" + u.Host
	}
	return u.String()
}

// maxNotices bounds the functions announced and not yet read; past it, the
// proxy reads every route once instead (a projections rebuild, a burst).
const maxNotices = 1024

// notices collects the functions announced while the previous ones are
// being read, so a burst of writes costs one query per batch, not one per
// event (and never a full refresh per event).
type notices struct {
	mu       sync.Mutex
	keys     map[fnKey]struct{}
	overflow bool          // more than maxNotices: read everything
	wake     chan struct{} // something is pending
}

func (n *notices) add(k fnKey) {
	n.mu.Lock()
	if len(n.keys) >= maxNotices {
		n.overflow = true
	} else {
		n.keys[k] = struct{}{}
	}
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// take returns what is pending and empties it.
func (n *notices) take() (keys []fnKey, all bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k := range n.keys {
		keys = append(keys, k)
	}
	clear(n.keys)
	all, n.overflow = n.overflow, false
	return keys, all
}

// listen keeps the table fresh: notifications of single functions, a full
// refresh whenever listening (re)starts and every RefreshInterval.
func (p *Proxy) listen(ctx context.Context) {
	pending := &notices{keys: map[fnKey]struct{}{}, wake: make(chan struct{}, 1)}
	go p.applyNotices(ctx, pending)
	go func() {
		t := time.NewTicker(p.cfg.RefreshInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := p.refreshAll(ctx); err != nil && ctx.Err() == nil {
					p.log.Warn("route refresh failed", "error", err)
				}
			}
		}
	}()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := p.cfg.Store.ListenRoutes(ctx, func() {
			backoff = 100 * time.Millisecond
			if err := p.refreshAll(ctx); err != nil && ctx.Err() == nil {
				p.log.Warn("route refresh failed", "error", err)
			}
		}, func(ns, name string) { pending.add(fnKey{ns, name}) })
		if ctx.Err() != nil {
			return
		}
		p.log.Warn("listening for route changes failed; listening again", "error", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// applyNotices reads the routes of the functions announced, off the
// listening connection: all those pending at once, in one query.
func (p *Proxy) applyNotices(ctx context.Context, pending *notices) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-pending.wake:
		}
		keys, all := pending.take()
		var err error
		switch {
		case all:
			err = p.refreshAll(ctx)
		case len(keys) > 0:
			err = p.refreshSome(ctx, keys)
		}
		if err != nil && ctx.Err() == nil {
			p.log.Warn("route refresh failed", "functions", len(keys), "error", err)
		}
	}
}
