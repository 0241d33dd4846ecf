package workers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/invoke"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// asyncWorker delivers one attempt of an asynchronous invocation:
//
//	function gone or invocation finished? complete → older than
//	max_event_age_sec? dead letter → max_concurrency deliveries running?
//	snooze → claim (attempt n, leased) → Invoker.Invoke (the proxy: cold
//	start, timeout, the invocation log's row of the attempt) → 2xx: succeeded;
//	another 4xx: failed; 429, 5xx, no answer: queued again and retried after
//	invoke.Backoff, or a dead letter after max_retries retries
//
// A final state is recorded once, in one transaction with the callback's
// job, if any; River then completes the job on its own (batched): a job
// worked again after a crash in between finds the invocation finished and
// does nothing. The function
// may be sent a request more than once (a crash after it answered and
// before the record): delivery is at least once; the Idempotency-Key of the
// enqueue gives the caller exactly one invocation id.
type asyncWorker struct {
	river.WorkerDefaults[outbox.DeliverArgs]
	w *Workers
}

// Timeout is the longest function timeout plus a margin; each attempt is
// bounded by its function's own timeout in the proxy.
func (a *asyncWorker) Timeout(*river.Job[outbox.DeliverArgs]) time.Duration { return maxRunTimeout }

// NextRetry spreads the retries of a failed attempt: invoke.Backoff with
// jitter, from 1 s.
func (a *asyncWorker) NextRetry(job *river.Job[outbox.DeliverArgs]) time.Time {
	return time.Now().Add(invoke.Backoff(job.Attempt, 0.5+rand.Float64()))
}

// errAttemptFailed makes River retry a delivery whose attempt was recorded.
var errAttemptFailed = errors.New("async delivery attempt failed; retrying")

// Work delivers the invocation, see asyncWorker.
func (a *asyncWorker) Work(ctx context.Context, job *river.Job[outbox.DeliverArgs]) error {
	w, args := a.w, job.Args
	id, err := uuid.Parse(args.ID)
	if err != nil {
		return river.JobCancel(fmt.Errorf("async delivery: bad invocation id %q", args.ID))
	}
	f, err := w.asyncFunctions.get(ctx, w.store, args.Namespace, args.Function, w.now())
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return nil // deleted, with its invocations
	}
	if err != nil {
		return err
	}
	if w.cfg.Invoker == nil {
		return domain.Errorf(domain.EUNAVAILABLE, "async delivery: this server has no invoker")
	}
	policy := f.Config.AsyncPolicy()
	maxAge := time.Duration(policy.MaxEventAgeSec) * time.Second
	if policy.MaxConcurrency > 0 && w.now().Sub(args.AgeFrom) <= maxAge { // one too old is given up at once
		// This process's deliveries of the function wait for each other
		// here, not in snoozes; ClaimAsync bounds them across processes.
		release, ok := w.asyncSlots.acquire(ctx, args.Namespace+"/"+args.Function, policy.MaxConcurrency, asyncSlotWait)
		if !ok {
			return river.JobSnooze(time.Duration(100+rand.IntN(200)) * time.Millisecond)
		}
		defer release()
	}
	inv, res, err := w.store.ClaimAsync(ctx, id, policy.MaxConcurrency, maxAge, w.now(), asyncLease(f.Config.TimeoutSec))
	if err != nil {
		return err
	}
	switch res {
	case store.Finished:
		return nil
	case store.Busy:
		return river.JobSnooze(time.Duration(100+rand.IntN(200)) * time.Millisecond)
	case store.Expired:
		why := fmt.Sprintf("event too old: not attempted again after max_event_age_sec (%d s)", policy.MaxEventAgeSec)
		return a.finish(ctx, job, inv, domain.AsyncDead, nil, lastResponse(inv), why)
	}

	started := w.now()
	result, err := w.cfg.Invoker.Invoke(ctx, invoke.Call{Namespace: inv.Namespace, Function: inv.Function, Kind: store.InvocationAsync,
		Method: inv.Request.Method, Path: inv.Request.Path, Query: inv.Request.Query, Header: inv.Request.Headers,
		Body: inv.Request.Body, RemoteAddr: inv.Request.RemoteAddr, Host: inv.Request.Host, AsyncID: inv.ID, Attempt: inv.AttemptCount})
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return nil
	}
	attempt := store.AsyncAttempt{Attempt: inv.AttemptCount, StartedAt: started, EndedAt: w.now(), Status: result.Status, Error: result.Error}
	if err != nil {
		attempt.Status, attempt.Error = 0, domain.ErrorMessage(err)
	}
	outcome := result.Outcome()
	if err != nil {
		outcome = invoke.NoAnswer
	}
	if ctx.Err() != nil {
		outcome = invoke.Interrupted
	}
	resp := &store.AsyncResponse{Status: result.Status, Headers: result.Header, Body: result.Body}
	if attempt.Status == 0 {
		resp = nil
	}
	switch {
	case outcome == invoke.Succeeded:
		return a.finish(ctx, job, inv, domain.AsyncSucceeded, &attempt, resp, "")
	case !invoke.RetryAgain(store.InvocationAsync, outcome, f.Config.RetrySafe):
		why := attempt.Error
		if why == "" {
			why = fmt.Sprintf("the function answered %d %s", attempt.Status, http.StatusText(attempt.Status)) // final: not retried
		}
		return a.finish(ctx, job, inv, domain.AsyncFailed, &attempt, resp, why)
	case outcome != invoke.Interrupted && inv.AttemptCount-inv.AttemptBase > policy.MaxRetries:
		return a.finish(ctx, job, inv, domain.AsyncDead, &attempt, resp, "retries exhausted")
	}
	// Retried: the attempt is recorded and the invocation queued again;
	// River works it again after NextRetry (a stop: at the next start).
	if err := w.store.FinishAsync(context.WithoutCancel(ctx), inv.ID, &attempt, domain.AsyncQueued, resp, attempt.Error, w.now()); err != nil {
		return err
	}
	if outcome == invoke.Interrupted {
		return river.JobSnooze(0)
	}
	return errAttemptFailed
}

// finish records inv's final state with its last attempt in one
// transaction; a dead letter appends its event, a callback is queued.
// River completes the job when Work returns (see asyncWorker).
func (a *asyncWorker) finish(ctx context.Context, job *river.Job[outbox.DeliverArgs], inv store.AsyncInvocation, state domain.AsyncState,
	last *store.AsyncAttempt, resp *store.AsyncResponse, why string) error {
	w := a.w
	ctx = context.WithoutCancel(ctx) // the answer is in hand: record it
	if state != domain.AsyncDead && inv.Request.CallbackURL == "" {
		return w.store.FinishAsync(ctx, inv.ID, last, state, resp, why, w.now()) // nothing goes with it
	}
	_, err := w.store.Execute(ctx, meta(job.Kind, job.ID), func(tx *store.Tx) error {
		if state == domain.AsyncDead {
			if err := w.cmd.DeadLetterTx(ctx, tx, inv, last, resp, why); err != nil {
				return err
			}
		} else if err := w.store.FinishAsyncTx(ctx, tx.Tx, inv.ID, last, state, resp, why, w.now()); err != nil {
			return err
		}
		if inv.Request.CallbackURL != "" {
			return w.insertJobs(ctx, tx, outbox.CallbackArgs{ID: inv.ID.String()})
		}
		return nil
	})
	return err
}

// lastResponse is the answer an invocation has kept, if any.
func lastResponse(inv store.AsyncInvocation) *store.AsyncResponse {
	if inv.Response.Status == 0 {
		return nil
	}
	return &inv.Response
}

// asyncLease is how long an attempt of a function with timeout timeoutSec
// holds its concurrency slot before it counts as dead (its worker's crash).
func asyncLease(timeoutSec int) time.Duration {
	return time.Duration(timeoutSec)*time.Second + runMargin
}

// asyncFunctionsTTL is how long a delivery uses the function's read model
// as an earlier delivery read it: a change of its async configuration
// applies within it.
const asyncFunctionsTTL = time.Second

// asyncFunctions caches the functions deliveries read (their async
// configuration, their timeout): one read per function and second, not
// one per delivery.
type asyncFunctions struct {
	mu sync.Mutex
	m  map[string]cachedFunction
}

type cachedFunction struct {
	f   domain.Function
	err error // ENOTFOUND is cached too
	at  time.Time
}

// get returns function ns/name as read at most asyncFunctionsTTL ago.
func (c *asyncFunctions) get(ctx context.Context, s *store.Store, ns, name string, now time.Time) (domain.Function, error) {
	key := ns + "/" + name
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < asyncFunctionsTTL && now.Sub(e.at) >= 0 {
		return e.f, e.err
	}
	f, err := s.GetFunction(ctx, ns, name)
	if err != nil && domain.ErrorCode(err) != domain.ENOTFOUND {
		return f, err // not cached: the next delivery asks again
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) > 10000 {
		c.m = map[string]cachedFunction{}
	}
	c.m[key] = cachedFunction{f: f, err: err, at: now}
	c.mu.Unlock()
	return f, err
}

// asyncSlotWait is how long a delivery waits for a slot of its function's
// max_concurrency in this process before it gives its worker back (snooze).
const asyncSlotWait = 5 * time.Second

// asyncSlots are the per-function semaphores of bounded deliveries in this
// process, keyed by function and bound (a changed bound starts a new one).
type asyncSlots struct {
	mu   sync.Mutex
	sems map[string]chan struct{}
}

// acquire takes one of limit slots of key, waiting at most wait; release
// gives it back.
func (s *asyncSlots) acquire(ctx context.Context, key string, limit int, wait time.Duration) (release func(), ok bool) {
	key += "#" + strconv.Itoa(limit)
	s.mu.Lock()
	if s.sems == nil {
		s.sems = map[string]chan struct{}{}
	}
	sem := s.sems[key]
	if sem == nil {
		sem = make(chan struct{}, limit)
		s.sems[key] = sem
	}
	s.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, true
	case <-t.C:
		return nil, false
	case <-ctx.Done():
		return nil, false
	}
}

// asyncPruneAge is how long finished invocations (not dead letters) are
// kept for GET .../invocations/{id}: the Idempotency-Key window.
const asyncPruneAge = domain.IdempotencyWindow
