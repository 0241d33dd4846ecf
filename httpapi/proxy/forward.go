package proxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/invoke"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/tracing"
)

// Headers the proxy reads or sets.
const (
	// LogHeader carries a runtime's per-invocation log (base64); the proxy
	// stores it with the invocation and never passes it to the caller.
	LogHeader = "X-Sless-Log"
	// InvocationHeader names the invocation in the request to the function
	// and in the response to the caller (GET .../invocations/{id}).
	InvocationHeader = "X-Sless-Invocation-Id"
	// PrefixHeader tells the function the path it is mounted at
	// (/fn/{ns}/{name}); it sees only the rest.
	PrefixHeader = "X-Forwarded-Prefix"
	// ErrorHeader carries the error code of an answer the platform gave
	// instead of the function (a timeout, a refusal, a failed start): a
	// caller tells it from a function's own error status by it. A
	// function's response never carries it (the proxy removes it).
	ErrorHeader = "X-Sless-Error"
)

// documentSandbox is the Content-Security-Policy of every response of a
// function: a page a function serves runs in an opaque origin, so its
// scripts cannot act as the platform's own origin (the console's pages and
// session, another tenant's functions). A function's own policy is added
// after it and applies too; the full slice expression makes that append copy.
var documentSandbox = []string{"sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads allow-popups-to-escape-sandbox"}[:1:1]

// call is one proxied request on its way: what the forwarder needs, and
// what becomes the invocation record. Calls are pooled: a request keeps
// none of them once it is recorded.
type call struct {
	rec      recorder
	e        *entry
	id       uuid.UUID
	idText   string // id.String(), in both directions
	target   *url.URL
	inst     *inst  // the instance target is, with the request counted on it
	path     string // the path below the function, escaped as received
	prefix   string
	timeout  int
	deadline time.Time // of the exchange with the function: its timeout
	cold     bool
	src      io.Reader // the body to send (the client's, or its spool); nil: none
	bodyLen  int64
	chunked  bool // the body came chunked, and goes on so
	bytesIn  int64
	status   int
	errText  string
	reason   string // why the proxy answered itself (sless_proxy_errors_total), or ""
	log      string // X-Sless-Log as received (base64)

	// kind is the record's trigger kind; owner marks a call of the
	// function's authenticated owner (Invoke): the caller's credentials of
	// the platform are not passed on, and its errors say what the public
	// ones keep for the invocation record.
	kind  store.TriggerKind
	owner bool
	// asyncID and attempt name an attempt of an asynchronous invocation
	// (Invoke); errOut, when set, receives errText when the call ends.
	asyncID uuid.UUID
	attempt int
	errOut  *string
	// span is the request's span, nil unless spans are exported.
	span *reqSpan

	// During the exchange: the connection, the client's context, and the
	// end of watching it (nil while not watched; see await).
	up      *upConn
	ctx     context.Context
	unwatch func() bool
}

var calls = sync.Pool{New: func() any { return new(call) }}

// Read reads the body to send, marking the client's errors as such.
func (c *call) Read(p []byte) (int, error) {
	n, err := c.src.Read(p)
	if err != nil && err != io.EOF {
		err = &bodyReadError{err}
	}
	return n, err
}

// ServeHTTP proxies /fn/{ns}/{name}[/sub/path] to the function's active
// version: 400 for a malformed path, 404 for an unknown function or one
// without an http trigger, 429 for a client over its ClientRate or a
// function at its max_concurrency, 503 while it is disabled, not ready or
// cannot be started, 413 for a body over MaxBodyBytes, 504 past its
// timeout_sec, 502 when it does not answer. A function being started is
// waited for. Every request to a known function is recorded.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if p.clients != nil {
		if ok, wait := p.clients.allow(p.clientAddr(r), start); !ok {
			p.rateLimited(w, wait)
			return
		}
	}
	path, async := asyncPath(r.URL.EscapedPath())
	var span *reqSpan // nil unless spans are exported: then the only cost is the check
	if tracing.Enabled() {
		route := routeFn
		if async {
			route = routeAsync
		}
		r, span = startServerSpan(r, route)
		defer span.end() // after finish, which notes the status
	}
	k, sub, err := splitPath(path)
	if err != nil {
		p.reject(w, r, span, "bad_request", err)
		return
	}
	span.function(k)
	if !async {
		if async, err = invoke.IsAsync(r.Header); err != nil {
			p.reject(w, r, span, "bad_request", err)
			return
		}
	}
	e := p.routes.get(k)
	var cfg *routeCfg
	if e != nil {
		cfg = e.cfg.Load()
	}
	if cfg == nil || cfg.HTTPTriggers == 0 {
		p.reject(w, r, span, "not_found",
			domain.Errorf(domain.ENOTFOUND, "no function %q with an http trigger in namespace %q", k.name, k.ns))
		return
	}
	if async {
		if !cfg.HTTPEnabled {
			p.reject(w, r, span, "disabled", domain.Errorf(domain.EUNAVAILABLE, "the http trigger of function %q is disabled", k.name))
			return
		}
		p.enqueue(w, r, span, k, sub)
		return
	}
	c, rec := p.newCall(w, e, cfg, sub, start)
	c.span = span
	defer p.finish(rec, r, c, cfg, start)

	switch {
	case !cfg.HTTPEnabled:
		p.refuse(rec, r, c, "disabled", domain.Errorf(domain.EUNAVAILABLE, "the http trigger of function %q is disabled", k.name))
		return
	case cfg.target == nil && !startable(cfg):
		p.refuse(rec, r, c, "not_ready", notReady(cfg))
		return
	}
	p.send(rec, r, c, cfg)
}

// newCall begins the call of a request to function e at path (below the
// function's prefix), recorded as an http invocation unless the caller says
// otherwise: the response names the invocation and runs in the sandbox
// (documentSandbox) whoever answers.
func (p *Proxy) newCall(w http.ResponseWriter, e *entry, cfg *routeCfg, path string, start time.Time) (*call, *recorder) {
	c := calls.Get().(*call)
	c.e, c.id, c.path, c.prefix, c.timeout = e, store.NewInvocationID(start), path, e.prefix, cfg.TimeoutSec
	c.kind = store.InvocationHTTP
	c.idText = c.id.String()
	rec := &c.rec
	rec.ResponseWriter = w
	h := w.Header()
	h[InvocationHeader] = []string{c.idText} // canonical already
	h["Content-Security-Policy"] = documentSandbox
	return c, rec
}

// send runs a call the function may take: the body limit (413), then,
// counted in flight, max_concurrency (429), the body (a chunked one read
// whole first), a cold start when the function sleeps, and the forwarder.
func (p *Proxy) send(rec *recorder, r *http.Request, c *call, cfg *routeCfg) {
	e := c.e
	if r.ContentLength > p.cfg.MaxBodyBytes {
		p.refuse(rec, r, c, "too_large", invoke.TooLarge(p.cfg.MaxBodyBytes))
		return
	}
	// Admitted: counted in flight from here, waiting for a start included,
	// which is what max_concurrency bounds and what keeps it awake.
	n := e.inflight.Add(1)
	defer p.release(e)
	if limit := p.maxConcurrency(cfg); limit > 0 && n > int64(limit) {
		p.refuse(rec, r, c, "concurrency",
			domain.Errorf(domain.ERATELIMITED, "function %q is serving its limit of %d requests at once", e.key.name, limit))
		return
	}
	switch {
	case chunked(r): // read whole before anything is woken or sent
		sp, err := spoolBody(r.Body, p.cfg.MaxBodyBytes)
		if err != nil {
			if errors.Is(err, errBodyTooLarge) {
				c.bytesIn = sp.n
				sp.Close()
				p.fail(rec, c, "too_large", invoke.TooLarge(p.cfg.MaxBodyBytes))
				return
			}
			c.status, c.errText = statusClientGone, "the request body could not be read: "+err.Error()
			p.metrics.proxyErrors.WithLabelValues("client_gone").Inc()
			return
		}
		defer sp.Close()
		if sp.n > 0 {
			c.src, c.bodyLen, c.chunked = sp, sp.n, true
		}
	case r.ContentLength > 0:
		c.src, c.bodyLen = r.Body, r.ContentLength
	}
	ctx := r.Context()
	timeout := time.Duration(cfg.TimeoutSec) * time.Second
	if timeout <= 0 {
		timeout = time.Duration(domain.DefaultTimeoutSec) * time.Second
	}
	var began time.Time
	if c.span != nil {
		began = time.Now()
	}
	in, cold, err := p.acquire(ctx, e, min(timeout, p.cfg.WakeTimeout))
	c.cold = cold
	if cold {
		c.span.coldStart(ctx, began, err)
	}
	if err != nil {
		if ctx.Err() != nil {
			c.status, c.errText = statusClientGone, "the client went away during the cold start"
			c.bytesIn = p.refusedBody(r)
			p.metrics.proxyErrors.WithLabelValues("client_gone").Inc()
			return
		}
		if domain.ErrorCode(err) == domain.ERATELIMITED { // the namespace's instance quota
			p.refuse(rec, r, c, "quota", err)
			return
		}
		p.refuse(rec, r, c, "unavailable", unavailable(err))
		return
	}
	p.metrics.inflight.Add(1)
	defer p.metrics.inflight.Add(-1)
	c.inst, c.target, c.deadline = in, in.url, time.Now().Add(timeout)
	defer func() { e.done(c.inst) }() // rewake may move c to another instance
	p.forward(rec, r, c)
}

// startable reports whether a function without an endpoint may be started
// for a request: its active version is built (phase Ready), only the rollout
// that runs it (after the build, or after its trigger was enabled) has not
// finished yet; or another control plane runs it (foreign), whatever the
// phase (Building: a newer version builds). Requests wait for it like for a
// cold start.
func startable(cfg *routeCfg) bool {
	return (cfg.Phase == domain.PhaseReady || cfg.foreign) && cfg.ActiveVersion > 0
}

// maxConcurrency is a function's max_concurrency, else the proxy's default; 0: none.
func (p *Proxy) maxConcurrency(cfg *routeCfg) int {
	if cfg.MaxConcurrency > 0 {
		return cfg.MaxConcurrency
	}
	return p.cfg.DefaultMaxConcurrency
}

// refuse answers a request of a known function that is not forwarded,
// counting the body it came with for the record (see refusedBody).
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, c *call, reason string, err error) {
	c.bytesIn = p.refusedBody(r)
	p.fail(w, c, reason, err)
}

// refusedBody is the size of the body of a request refused before
// forwarding: its Content-Length, else what arrives up to MaxBodyBytes, read
// and dropped (the server reads 256 KiB of it anyway, to reuse the connection).
func (p *Proxy) refusedBody(r *http.Request) int64 {
	switch {
	case r.ContentLength >= 0:
		return r.ContentLength
	case r.Body == nil || r.Body == http.NoBody || r.Context().Err() != nil:
		return 0
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, p.cfg.MaxBodyBytes))
	return n
}

// statusClientGone is the status recorded when the caller left first (nginx's 499).
const statusClientGone = 499

// finish records the invocation and its metrics, also when the response was
// cut (the forwarder panics with http.ErrAbortHandler), and gives c back.
func (p *Proxy) finish(rec *recorder, r *http.Request, c *call, cfg *routeCfg, start time.Time) {
	aborted := recover()
	d := time.Since(start)
	status := c.status
	if status == 0 {
		status = rec.status
	}
	if aborted != nil && c.errText == "" {
		c.errText = "the response was cut off"
	}
	if status == 0 {
		status = http.StatusOK
		if aborted != nil {
			status = http.StatusBadGateway
		}
	}
	inv := store.Invocation{ID: c.id, Namespace: c.e.key.ns, Function: c.e.key.name, Version: cfg.ActiveVersion,
		Trigger: c.kind, Method: r.Method, Path: c.path, Status: status, Duration: d,
		ColdStart: c.cold, Error: c.errText, Log: decodeLog(c.log), StartedAt: start, BytesIn: c.bytesIn, BytesOut: rec.bytes,
		AsyncID: c.asyncID, Attempt: c.attempt}
	if c.errOut != nil {
		*c.errOut = c.errText
	}
	p.metrics.observe(c.e.m, c.kind, status, c.reason, d)
	p.record(inv)
	if c.span != nil {
		c.span.recorded(c, cfg.ActiveVersion, status)
	}
	*c = call{}
	calls.Put(c)
	if aborted != nil {
		panic(aborted)
	}
}

// decodeLog turns an X-Sless-Log value into text; a value that is not base64
// is kept as it came.
func decodeLog(v string) string {
	if v == "" {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return v
	}
	return string(b)
}

// splitPath parses /fn/{ns}/{name}[/rest] from an escaped path. Namespace
// and name must be exactly valid (domain.IsNamespace, IsName: lower-case
// DNS labels, hence no escapes, dots or '@'): anything else is EINVALID, so
// no request path can choose where the proxy connects.
func splitPath(escaped string) (fnKey, string, error) {
	rest, ok := strings.CutPrefix(escaped, Prefix)
	if !ok {
		return fnKey{}, "", domain.Errorf(domain.EINVALID, "function paths look like %s{namespace}/{function}/...", Prefix)
	}
	ns, rest, _ := strings.Cut(rest, "/")
	name, _, _ := strings.Cut(rest, "/")
	if !domain.IsNamespace(ns) {
		return fnKey{}, "", domain.Errorf(domain.EINVALID, "%q is not a namespace", ns)
	}
	if !domain.IsName(name) {
		return fnKey{}, "", domain.Errorf(domain.EINVALID, "%q is not a function name", name)
	}
	sub := rest[len(name):] // escaped, as received
	if sub == "" {
		sub = "/"
	}
	return fnKey{ns, name}, sub, nil
}

// notReady is the 503 of a function that cannot serve: its phase, for the
// caller; why (a build's compiler output, a start's traceback with the
// paths of the host) is for the owner, in the invocation record.
func notReady(cfg *routeCfg) error {
	err := domain.Errorf(domain.EUNAVAILABLE, "function %q is not ready (phase %s)", cfg.Function, cfg.Phase)
	if cfg.Message == "" {
		return err
	}
	return &hidden{public: err, detail: err.Message + ": " + cfg.Message}
}

// hidden is an answer whose public message leaves out what only the
// function's owner may read; detail, with it, goes to the invocation record
// (which only the owner can query) instead.
type hidden struct {
	public *domain.Error
	detail string
}

func (h *hidden) Error() string { return h.public.Error() }
func (h *hidden) Unwrap() error { return h.public }

// unavailable is err as the 503 of a function that could not be started:
// its message stays, its detail goes to the record.
func unavailable(err error) error {
	if domain.ErrorCode(err) == domain.EUNAVAILABLE {
		return err
	}
	return &hidden{public: domain.Errorf(domain.EUNAVAILABLE, "%s", domain.ErrorMessage(err)), detail: recordText(err)}
}

// revealed is err with the detail a hidden error keeps for the record, for
// the function's owner, who may read that record anyway.
func revealed(err error) error {
	var h *hidden
	if errors.As(err, &h) {
		return domain.Errorf(h.public.Code, "%s", h.detail)
	}
	return err
}

// recordText is the error of an answer as the invocation record keeps it.
func recordText(err error) string {
	var h *hidden
	if errors.As(err, &h) {
		return h.detail
	}
	return domain.ErrorMessage(err)
}

// upstreamError answers a request the function did not: 504 past its
// timeout, nothing to a caller who left (or whose body could not be read),
// 502 otherwise.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, c *call, err error) {
	var bre *bodyReadError
	switch {
	case c.timedOut(err):
		p.fail(w, c, "timeout", domain.Errorf(domain.ETIMEOUT, "%v", timeoutError(c.timeout)))
	case r.Context().Err() != nil:
		c.status, c.errText = statusClientGone, "the client went away"
		p.metrics.proxyErrors.WithLabelValues("client_gone").Inc()
	case errors.As(err, &bre):
		c.status, c.errText = statusClientGone, "the request body could not be read: "+bre.error.Error()
		p.metrics.proxyErrors.WithLabelValues("client_gone").Inc()
	default:
		p.log.Warn("function did not answer", "function", c.e.key.String(), "error", err)
		p.fail(w, c, "upstream", domain.Errorf(domain.EBADGATEWAY, "the function did not answer"))
		// The caller has its answer now, not after the wait for why.
		_ = http.NewResponseController(w).Flush()
		if why := p.exitReason(c.target); why != "" {
			c.errText += ": its process ended: " + why // for the owner, in the invocation log
		}
	}
}

// fail answers a call with err (its public part, or all of it to the
// function's owner) and notes it for the record.
func (p *Proxy) fail(w http.ResponseWriter, c *call, reason string, err error) {
	p.metrics.proxyErrors.WithLabelValues(reason).Inc()
	c.reason = reason
	answer := err
	if c.owner {
		answer = revealed(err)
	}
	c.status, c.errText = writeError(w, answer), recordText(err)
}

// reject answers a request that concerns no known function; nothing is
// recorded but the status on its span (nil: none).
func (p *Proxy) reject(w http.ResponseWriter, r *http.Request, span *reqSpan, reason string, err error) {
	p.metrics.proxyErrors.WithLabelValues(reason).Inc()
	span.answered(writeError(w, err), reason)
}

// writeError writes the API's error shape, {"error": {"code", "message"}},
// with the status of the code, which it returns, and the code in ErrorHeader.
func writeError(w http.ResponseWriter, err error) int {
	code := domain.ErrorCode(err)
	status := wire.StatusOf(code)
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": domain.ErrorMessage(err)}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(ErrorHeader, code)
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	h.Set("Cache-Control", "no-store")
	if (status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests) && h.Get("Retry-After") == "" {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
	return status
}

// recorder notes the status and counts the bytes of a response. Flushing
// and hijacking reach the server's writer through Unwrap.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// flush sends what the response has so far to the client, through any
// wrapper of the server's writer that can unwrap.
func (r *recorder) flush() {
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// errTimeout is the cause of a request context that ran out of the function's timeout.
var errTimeout = errors.New("function timeout")

// timeoutError is the 504 message of a function that ran past its timeout.
func timeoutError(sec int) error {
	return fmt.Errorf("the function did not answer within its timeout of %d s", sec)
}
