// Package invoke is how the platform calls a function, in one place: the
// request path's types and its Invoker port, which the proxy implements
// (resolve the runnable version, wake an instance through the driver,
// send, record the invocation), the run path's Runner (a job's run or a
// cron slot as a one-shot process through the driver's Run, recorded), and
// the retry policy of every kind of invocation in one table (RetryAgain).
//
// The public /fn proxy and the API's invoke serve callers on the spot; the
// async worker delivers queued invocations through an Invoker; the job and
// cron workers run through a Runner and ask RetryAgain whether an
// interrupted attempt runs again. It imports domain, driver and store.
package invoke

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// Call is one invocation of a function with an HTTP request.
type Call struct {
	Namespace, Function string
	Kind                store.TriggerKind
	Method              string
	Path                string // below the function, starting with "/"
	Query               string
	Header              http.Header
	Body                []byte
	// RemoteAddr and Host are the original caller's peer and Host, which
	// the proxy forwards (X-Forwarded-For, -Host) as for that caller.
	RemoteAddr, Host string
	// AsyncID and Attempt name an attempt of an asynchronous invocation,
	// recorded with it in the invocation log.
	AsyncID uuid.UUID
	Attempt int
}

// Result is the function's answer. Status 0 means none: Error says why
// (the platform's words, for the function's owner). PlatformCode is the
// error code when the platform answered instead of the function (the
// proxy's X-Sless-Error: CONFLICT for no built version, TIMEOUT, ...).
type Result struct {
	Status       int
	Header       http.Header
	Body         []byte
	Error        string
	PlatformCode string
}

// Outcome classifies the result for the retry policy: the platform's "no
// built version yet" (CONFLICT) is worth another attempt, as its first
// build may be running; every other answer by its status (Classify).
func (r Result) Outcome() Outcome {
	if r.PlatformCode == domain.ECONFLICT {
		return ServerError
	}
	return Classify(r.Status)
}

// Invoker calls a function: the proxy, with cold starts, the function's
// timeout (504) and max_concurrency (429), recording the invocation.
type Invoker interface {
	// Invoke returns an error only when the function cannot be found
	// (ENOTFOUND) or the platform cannot say (EUNAVAILABLE); every answer
	// of the function or of the proxy for it (409 not built, 502, 503,
	// 504) is a Result.
	Invoke(ctx context.Context, c Call) (Result, error)
}

// Outcome classifies a finished attempt for the retry policy.
type Outcome int

const (
	Succeeded   Outcome = iota // 2xx (runs: exit 0)
	Throttled                  // 429: the function's max_concurrency
	ServerError                // 5xx: the function failed, or the proxy could not reach it
	NoAnswer                   // a timeout or a connection error
	ClientError                // another 4xx: the request is at fault
	Interrupted                // the platform stopped (a shutdown, a crash) before an answer
	Cancelled                  // its owner cancelled it (a deleted job's run)
)

// Classify returns the outcome of an HTTP status (0: no answer).
func Classify(status int) Outcome {
	switch {
	case status == 0:
		return NoAnswer
	case status < 400:
		return Succeeded
	case status == http.StatusTooManyRequests:
		return Throttled
	case status >= 500:
		return ServerError
	}
	return ClientError
}

// retries is the retry policy of every kind of invocation: which outcomes
// are tried again. A synchronous call (/fn, the API's invoke) is never
// retried by the platform: its caller has the answer. A job run or a cron
// slot whose attempt got no answer (River's timeout) runs again; one
// interrupted by a shutdown or a crash only when the function is
// retry_safe (RetryAgain); the run's own failure (an exit code, its
// timeout) is its outcome. An async delivery retries what another attempt
// may fix. Nothing cancelled runs again.
var retries = map[store.TriggerKind]map[Outcome]bool{
	store.InvocationHTTP:  {},
	store.InvocationAPI:   {},
	store.InvocationAsync: {Throttled: true, ServerError: true, NoAnswer: true, Interrupted: true},
	store.InvocationJob:   {Interrupted: true, NoAnswer: true},
	store.InvocationCron:  {Interrupted: true, NoAnswer: true},
}

// RetryAgain says whether an invocation of kind that ended in outcome is
// tried again; retrySafe is the function's retry_safe, which a job run and
// a cron slot need to run again after an interruption.
func RetryAgain(kind store.TriggerKind, outcome Outcome, retrySafe bool) bool {
	if !retries[kind][outcome] {
		return false
	}
	if (kind == store.InvocationJob || kind == store.InvocationCron) && outcome == Interrupted {
		return retrySafe
	}
	return true
}

// Backoff is the delay before retry n (1, 2, ...) of an async delivery:
// 1 s doubled for each retry, at most 5 minutes, times jitter (a number in
// [0.5, 1.5), so that retries of many invocations spread out).
func Backoff(n int, jitter float64) time.Duration {
	d := min(time.Second<<min(max(n-1, 0), 9), 5*time.Minute)
	return time.Duration(float64(d) * jitter)
}
