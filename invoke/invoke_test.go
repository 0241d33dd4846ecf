package invoke

import (
	"net/http"
	"testing"
	"time"

	"github.com/slessio/sless/store"
)

func TestRetryPolicy(t *testing.T) {
	for _, tc := range []struct {
		kind      store.TriggerKind
		status    int
		retrySafe bool
		interrupt bool
		want      bool
	}{
		{store.InvocationAsync, 200, false, false, false},
		{store.InvocationAsync, 0, false, false, true},   // timeout, connection error
		{store.InvocationAsync, 429, false, false, true}, // max_concurrency
		{store.InvocationAsync, 500, false, false, true},
		{store.InvocationAsync, 503, false, false, true},
		{store.InvocationAsync, 404, false, false, false},
		{store.InvocationAsync, 422, false, false, false},
		{store.InvocationAsync, 0, false, true, true},
		{store.InvocationHTTP, 503, false, false, false}, // the caller has the answer
		{store.InvocationAPI, 0, false, false, false},
		{store.InvocationJob, 0, false, true, false}, // an interrupted run needs retry_safe
		{store.InvocationJob, 0, true, true, true},
		{store.InvocationJob, 500, true, false, false},
		{store.InvocationCron, 0, true, true, true},
		{store.InvocationJob, 0, false, false, true}, // River's timeout: no answer, runs again
	} {
		o := Classify(tc.status)
		if tc.interrupt {
			o = Interrupted
		}
		if got := RetryAgain(tc.kind, o, tc.retrySafe); got != tc.want {
			t.Errorf("%s %d (retry_safe %v, interrupted %v): %v, want %v", tc.kind, tc.status, tc.retrySafe, tc.interrupt, got, tc.want)
		}
	}
}

func TestCancelledNeverRunsAgain(t *testing.T) {
	for _, kind := range []store.TriggerKind{store.InvocationJob, store.InvocationCron, store.InvocationAsync, store.InvocationHTTP} {
		if RetryAgain(kind, Cancelled, true) {
			t.Errorf("a cancelled %s runs again", kind)
		}
	}
}

func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 9: 256 * time.Second, 10: 5 * time.Minute, 40: 5 * time.Minute} {
		if got := Backoff(n, 1); got != want {
			t.Errorf("Backoff(%d) = %s, want %s", n, got, want)
		}
	}
	if lo, hi := Backoff(2, 0.5), Backoff(2, 1.4999); lo != time.Second || hi >= 3*time.Second {
		t.Errorf("jitter of retry 2: [%s, %s], want [1 s, 3 s)", lo, hi)
	}
}

func TestIsAsync(t *testing.T) {
	for v, want := range map[string]bool{"": false, "sync": false, "Async": true, "event": true, "RequestResponse": false} {
		h := http.Header{}
		if v != "" {
			h.Set(TypeHeader, v)
		}
		if got, err := IsAsync(h); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", v, got, err, want)
		}
	}
	if _, err := IsAsync(http.Header{TypeHeader: {"later"}}); err == nil {
		t.Error("an unknown type is accepted")
	}
}

func TestResultOutcome(t *testing.T) {
	if o := (Result{Status: 409, PlatformCode: "CONFLICT"}).Outcome(); o != ServerError {
		t.Errorf("no built version yet: %v, want a retry (ServerError)", o)
	}
	if o := (Result{Status: 409}).Outcome(); o != ClientError {
		t.Errorf("the function's own 409: %v, want ClientError", o)
	}
	if o := (Result{Status: 504, PlatformCode: "TIMEOUT"}).Outcome(); o != ServerError {
		t.Errorf("a timeout: %v, want ServerError", o)
	}
}
