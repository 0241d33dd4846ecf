package proxy

import (
	"net/http"
	"strings"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/tracing"
)

// ServeInvoke calls a function for its authenticated owner — the API's POST
// /v1/namespaces/{ns}/functions/{name}/invoke and the console's invoke
// panel, which checked the caller — and writes the function's answer to w
// as /fn would: its status, headers and body, with the same header rules
// (hop-by-hop headers removed both ways, documentSandbox on the response),
// the function's timeout_sec (504), MaxBodyBytes (413) and max_concurrency
// (429). The function sees the request's method and query at its path "/".
//
// No trigger is needed: a function without an http trigger, or with its
// triggers disabled, is started on demand like a cold start (Scaler.Wake)
// and stopped by the idle timeout like any; /fn still refuses it. A
// function without a built active version is ECONFLICT (409), saying why.
// The caller's Authorization and Cookie headers — its credentials of the
// platform — never reach the function, and errors tell the owner what the
// public ones keep for the invocation record (why a start failed). The call
// is recorded with trigger kind kind (store.InvocationAPI).
//
// ServeInvoke returns an error, having written nothing, only when the function
// does not exist (ENOTFOUND) or the route table could not be read
// (EUNAVAILABLE, EINTERNAL); the caller renders it.
func (p *Proxy) ServeInvoke(w http.ResponseWriter, r *http.Request, namespace, function string, kind store.TriggerKind) error {
	return p.invokeAt(w, r, namespace, function, "/", func(c *call) { c.kind, c.owner = kind, true })
}

// invokeAt is ServeInvoke at path (below the function, escaped), with setup
// marking the call (its kind, owner, async attempt) before it is sent.
func (p *Proxy) invokeAt(w http.ResponseWriter, r *http.Request, namespace, function, path string, setup func(*call)) error {
	start := time.Now()
	if !domain.IsNamespace(namespace) || !domain.IsName(function) {
		return domain.Errorf(domain.ENOTFOUND, "function %q not found", function)
	}
	k := fnKey{namespace, function}
	e, cfg := p.lookup(k)
	if cfg == nil || cfg.ActiveVersion == 0 {
		// The table follows the read model through notifications, so a
		// function created or built a moment ago may not be in it yet. This
		// path is authenticated and rate limited by the API: it may ask the
		// store, which /fn never does per request.
		if err := p.refreshSome(r.Context(), []fnKey{k}); err != nil {
			return err
		}
		e, cfg = p.lookup(k)
	}
	if cfg == nil {
		return domain.Errorf(domain.ENOTFOUND, "function %q not found", function)
	}
	var span *reqSpan
	if tracing.Enabled() {
		r, span = startInvokeSpan(r, k)
		defer span.end() // after finish, which notes the status
	}
	c, rec := p.newCall(w, e, cfg, path, start)
	setup(c)
	c.span = span
	defer p.finish(rec, r, c, cfg, start)
	if cfg.ActiveVersion == 0 {
		p.refuse(rec, r, c, "not_built", notBuilt(cfg))
		return nil
	}
	p.send(rec, r, c, cfg)
	return nil
}

// lookup returns a function's entry in the route table and its route; nil
// when the table does not know it.
func (p *Proxy) lookup(k fnKey) (*entry, *routeCfg) {
	e := p.routes.get(k)
	if e == nil {
		return nil, nil
	}
	return e, e.cfg.Load()
}

// notBuilt is the ECONFLICT of a function that has no built version to
// run, with why: no code yet, its first build running, or that build failed
// (its message, which only the owner reads).
func notBuilt(cfg *routeCfg) error {
	name := cfg.Function
	switch cfg.Phase {
	case domain.PhasePending:
		return domain.Errorf(domain.ECONFLICT, "function %q has no code yet: deploy it (sless fn deploy, or upload a zip) before invoking it", name)
	case domain.PhaseBuilding:
		return domain.Errorf(domain.ECONFLICT, "function %q has no built version yet: its first build is running; invoke it once it is Ready", name)
	}
	msg := "function %q has no built version to run: its build failed"
	if why := firstLine(cfg.Message); why != "" {
		return domain.Errorf(domain.ECONFLICT, msg+": %s", name, why)
	}
	return domain.Errorf(domain.ECONFLICT, msg, name)
}

// firstLine is the first non-blank line of s, at most 300 bytes of it.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return domain.Truncate(line, 300)
		}
	}
	return ""
}
