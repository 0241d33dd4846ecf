package proxy

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/invoke"
	"github.com/slessio/sless/store"
)

// Enqueuer accepts asynchronous invocations: *command.Commands.
type Enqueuer interface {
	EnqueueAsync(ctx context.Context, in command.AsyncEnqueue) (store.AsyncInvocation, bool, error)
}

// MaxAsyncResponse is the most of a function's answer to an async delivery
// that is kept (for the outcome, the callback and the dead letter); the
// rest is cut.
const MaxAsyncResponse = 1 << 20

// asyncPath turns a path under invoke.AsyncPrefix into its /fn/ path; ok
// is false for any other path.
func asyncPath(escaped string) (string, bool) {
	rest, ok := strings.CutPrefix(escaped, invoke.AsyncPrefix)
	if !ok {
		return escaped, false
	}
	return Prefix + rest, true
}

// enqueue answers an asynchronous request to function k at path sub: 202
// once the request and its delivery are committed (Config.Enqueue), 200 for
// a repeat under its Idempotency-Key; nothing is recorded in the invocation
// log until an attempt runs. When spans are exported, the request is
// queued with span's trace context in place of the caller's (its
// deliveries link to it), and EnqueueAsync gets r's context, with the span.
func (p *Proxy) enqueue(w http.ResponseWriter, r *http.Request, span *reqSpan, k fnKey, sub string) {
	if p.cfg.Enqueue == nil {
		p.reject(w, r, span, "async_off", domain.Errorf(domain.EUNAVAILABLE, "this server does not queue invocations"))
		return
	}
	req, key, err := invoke.ReadAsync(r, sub, p.cfg.MaxBodyBytes, false)
	if err != nil {
		p.reject(w, r, span, "bad_request", err)
		return
	}
	if p.cfg.PlatformToken != nil {
		if auth := r.Header.Get("Authorization"); auth != "" && p.cfg.PlatformToken(auth) {
			delete(req.Headers, "Authorization") // as a synchronous call drops it
		}
	}
	if span != nil {
		span.into(r.Context(), req.Headers)
	}
	inv, created, err := p.cfg.Enqueue.EnqueueAsync(r.Context(), command.AsyncEnqueue{Namespace: k.ns, Function: k.name,
		Request: req, IdempotencyKey: key, Checked: true})
	if err != nil {
		p.reject(w, r, span, "enqueue", err)
		return
	}
	p.metrics.asyncEnqueued.Inc()
	status := http.StatusOK
	if created {
		status = http.StatusAccepted
	}
	span.queued(inv.ID)
	span.answered(status, "")
	wire.WriteAccepted(w, inv.Namespace, inv.Function, inv.ID.String(), string(inv.State), created)
}

// Invoke implements invoke.Invoker: it sends c's request to the function
// as ServeInvoke does for its owner (no trigger needed, a cold start when
// it sleeps, its timeout and max_concurrency), records it in the
// invocation log with c's kind, async id and attempt, and returns the
// answer (its body cut at MaxAsyncResponse).
func (p *Proxy) Invoke(ctx context.Context, c invoke.Call) (invoke.Result, error) {
	target := c.Path
	if c.Query != "" {
		target += "?" + c.Query
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return invoke.Result{}, domain.Errorf(domain.EINVALID, "the stored path %.100q is not a request path", target)
	}
	r, err := http.NewRequestWithContext(ctx, c.Method, "/", bytes.NewReader(c.Body))
	if err != nil {
		return invoke.Result{}, domain.Errorf(domain.EINVALID, "the stored request cannot be sent: %v", err)
	}
	r.URL, r.RemoteAddr, r.Host = u, c.RemoteAddr, c.Host
	r.Header = c.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.ContentLength = int64(len(c.Body))
	w := &bufferWriter{header: http.Header{}}
	var errText string
	err = p.invokeAt(w, r, c.Namespace, c.Function, c.Path, func(cl *call) {
		cl.kind, cl.asyncID, cl.attempt, cl.errOut = c.Kind, c.AsyncID, c.Attempt, &errText
	})
	if err != nil {
		return invoke.Result{}, err
	}
	return invoke.Result{Status: w.status, Header: w.header, Body: w.body.Bytes(), Error: errText,
		PlatformCode: w.header.Get(ErrorHeader)}, nil
}

// bufferWriter keeps a response in memory, its body up to MaxAsyncResponse.
type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferWriter) Header() http.Header { return w.header }

func (w *bufferWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
}

func (w *bufferWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if room := MaxAsyncResponse - w.body.Len(); room > 0 {
		w.body.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

// Flush implements http.Flusher: there is nothing to flush to.
func (w *bufferWriter) Flush() {}

// MaxBodyBytes is the largest request body the proxy takes (and queues).
func (p *Proxy) MaxBodyBytes() int64 { return p.cfg.MaxBodyBytes }

// UseEnqueuer sets Config.Enqueue; call it before Start.
func (p *Proxy) UseEnqueuer(e Enqueuer) { p.cfg.Enqueue = e }
