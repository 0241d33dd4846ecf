package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/internal/testutil"
)

// asyncHandler is the function of the async scenarios. Its event says what
// to do: fail (answer 500) the first `fail` times a key is seen, always
// (mode "fail"), sleep, or report the most deliveries it ever ran at once
// and how often it saw each key (mode "report").
const asyncHandler = `import threading
import time

_lock = threading.Lock()
_seen = {}
_running = 0
_most = 0


def handle(event):
    global _running, _most
    if event.get("mode") == "report":
        with _lock:
            return {"most": _most, "seen": _seen}
    key = event.get("key", "")
    with _lock:
        _seen[key] = _seen.get(key, 0) + 1
        n = _seen[key]
        _running += 1
        _most = max(_most, _running)
    try:
        time.sleep(event.get("sleep", 0))
        headers = event.get("_headers", {})
        if event.get("mode") == "fail" or n <= event.get("fail", 0):
            return {"statusCode": 500, "body": {"failed": n, "async_id": headers.get("x-sless-async-id")}}
        return {"ok": key, "n": n, "async_id": headers.get("x-sless-async-id"), "attempt": headers.get("x-sless-attempt"),
                "xff": headers.get("x-forwarded-for"), "xfh": headers.get("x-forwarded-host")}
    finally:
        with _lock:
            _running -= 1
`

// fixedHandler is the version deployed after a dead letter: it succeeds.
const fixedHandler = `def handle(event):
    return {"fixed": True}
`

// TestAsync: asynchronous invocations on one control plane with the local
// driver and real Python processes — retries with backoff, dead letters and
// their retry after a fix, one run for 50 enqueues under one key,
// max_concurrency under 100 queued deliveries, callbacks, bad input, and a
// kill -9 with deliveries in flight.
func TestAsync(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	hook := newCallbackReceiver(t)
	p := w.newPlane("a", "SLESS_CALLBACK_ALLOW=http://"+hook.addr)
	p.start()
	tn := newTenant(t, p, "async")
	c := tn.api(p)
	ctx := context.Background()

	tn.deploy(p, "flaky", asyncHandler, false, true)
	t.Run("retries", func(t *testing.T) { asyncRetries(t, w, tn, c) })
	t.Run("dead letters", func(t *testing.T) { asyncDeadLetters(t, p, tn, c) })
	t.Run("idempotency", func(t *testing.T) { asyncIdempotency(t, w, p, tn, c) })
	t.Run("bad input", func(t *testing.T) { asyncBadInput(t, w, p, tn, c, hook) })

	// max_concurrency 2 under 100 queued deliveries.
	tn.create(p, "bounded", false, false)
	if _, err := c.UpdateFunction(ctx, "bounded", client.UpdateFunctionRequest{Async: &client.AsyncPatch{MaxConcurrency: client.Ptr(2)}}); err != nil {
		t.Fatal(err)
	}
	tn.waitServing(p, "bounded", tn.upload(p, "bounded", asyncHandler), 90*time.Second)
	t.Run("max concurrency", func(t *testing.T) { asyncConcurrency(t, tn, c) })

	// A burst of queued invocations scales to max_instances 3, no further.
	if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "burst", Runtime: "python3.11", MaxInstances: 3, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	tn.waitServing(p, "burst", tn.upload(p, "burst", asyncHandler), 90*time.Second)
	t.Run("scale", func(t *testing.T) { asyncScale(t, c) })
	t.Run("kill -9", func(t *testing.T) { asyncKill9(t, w, p, tn, c) })
}

// enqueue queues event for fn and returns the invocation's id.
func enqueue(t *testing.T, c *client.Client, fn, event string, o client.AsyncOptions) string {
	t.Helper()
	acc, err := c.InvokeAsync(context.Background(), fn, []byte(event), o)
	if err != nil {
		t.Fatalf("enqueue %s %s: %v", fn, event, err)
	}
	if !acc.Created || acc.State != "queued" {
		t.Fatalf("enqueue %s: %+v, want created and queued", fn, acc)
	}
	return acc.InvocationID
}

// finished waits until invocation id of fn is finished and returns it.
func finished(t *testing.T, c *client.Client, fn, id string, limit time.Duration) *client.AsyncInvocation {
	t.Helper()
	var inv *client.AsyncInvocation
	testutil.WaitFor(t, limit, func() bool {
		var err error
		inv, err = c.GetAsyncInvocation(context.Background(), fn, id)
		return err == nil && domain.AsyncState(inv.State).Finished()
	})
	return inv
}

// statuses lists the attempts' statuses: "500 500 200".
func statuses(inv *client.AsyncInvocation) string {
	var s []string
	for _, a := range inv.Attempts {
		s = append(s, fmt.Sprint(a.Status))
	}
	return strings.Join(s, " ")
}

// logRows waits for the invocation log to hold n rows of async invocation
// id (the writer writes in batches) and returns their statuses by attempt.
func (w *world) logRows(t *testing.T, id string, n int) string {
	t.Helper()
	var got string
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows, err := w.db.Query(context.Background(), `SELECT attempt, status FROM invocations WHERE async_id = $1 ORDER BY attempt`, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			var a, s int
			if err := rows.Scan(&a, &s); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d:%d", a, s))
		}
		rows.Close()
		got = strings.Join(out, " ")
		if len(out) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func asyncRetries(t *testing.T, w *world, tn *tenant, c *client.Client) {
	const scenario = "async: retries"
	id := enqueue(t, c, "flaky", `{"key": "twice", "fail": 2}`, client.AsyncOptions{})
	inv := finished(t, c, "flaky", id, 60*time.Second)
	log := w.logRows(t, id, 3)
	var saw struct {
		AsyncID string `json:"async_id"`
		Attempt string `json:"attempt"`
		XFF     string `json:"xff"`
		XFH     string `json:"xfh"`
	}
	if inv.Response != nil {
		_ = json.Unmarshal([]byte(inv.Response.Body), &saw)
	}
	// Backoff: retry n waits 2^(n-1) s times a jitter in [0.5, 1.5).
	var gaps []time.Duration
	ok := len(inv.Attempts) == 3
	for i := 1; ok && i < len(inv.Attempts); i++ {
		gap := inv.Attempts[i].StartedAt.Sub(inv.Attempts[i-1].EndedAt)
		gaps = append(gaps, gap.Round(10*time.Millisecond))
		base := time.Second << (i - 1)
		ok = ok && gap >= base/2-50*time.Millisecond && gap < base*3/2+2*time.Second
	}
	promise(t, scenario, "fails twice, then succeeds: 3 attempts, each in the invocation log, backoff within bounds; the function sees the id, the attempt and who called",
		ok && inv.State == "succeeded" && statuses(inv) == "500 500 200" && log == "1:500 2:500 3:200" && saw.AsyncID == id && saw.Attempt == "3" &&
			saw.XFF == "127.0.0.1" && saw.XFH != "",
		"state %s, attempts [%s], log rows [%s], gaps %v (bounds [0.5, 1.5) s and [1, 3) s, +2 s of polling); the function saw %+v",
		inv.State, statuses(inv), log, gaps, saw)
}

func asyncDeadLetters(t *testing.T, p *plane, tn *tenant, c *client.Client) {
	const scenario = "async: dead letters"
	ctx := context.Background()
	tn.create(p, "broken", false, false)
	if _, err := c.UpdateFunction(ctx, "broken", client.UpdateFunctionRequest{Async: &client.AsyncPatch{MaxRetries: client.Ptr(1)}}); err != nil {
		t.Fatal(err)
	}
	tn.waitServing(p, "broken", tn.upload(p, "broken", asyncHandler), 90*time.Second)
	id := enqueue(t, c, "broken", `{"mode": "fail"}`, client.AsyncOptions{})
	inv := finished(t, c, "broken", id, 60*time.Second)
	dl, err := c.ListDeadLetters(ctx, "broken", 0, "")
	listed := err == nil && len(dl.Invocations) == 1 && dl.Invocations[0].InvocationID == id
	promise(t, scenario, "always fails: a dead letter after max_retries+1 attempts, listed with its last response",
		inv.State == "dead_lettered" && statuses(inv) == "500 500" && inv.Error == "retries exhausted" && listed &&
			inv.Response != nil && inv.Response.Status == 500,
		"state %s (%s), attempts [%s], listed %v", inv.State, inv.Error, statuses(inv), listed)

	// A fixed version, then a retry from the dead letters: same id, the
	// attempts continue.
	tn.waitServing(p, "broken", tn.upload(p, "broken", fixedHandler), 90*time.Second)
	if _, err := c.RetryDeadLetter(ctx, "broken", id); err != nil {
		t.Fatal(err)
	}
	inv = finished(t, c, "broken", id, 60*time.Second)
	dl, _ = c.ListDeadLetters(ctx, "broken", 0, "")
	events, _ := c.ListEvents(ctx, client.EventQuery{Stream: domain.FunctionStream(tn.ns, "broken")})
	var kinds []string
	if events != nil {
		for _, e := range events.Events {
			if strings.HasPrefix(e.Type, "async.") {
				kinds = append(kinds, e.Type)
			}
		}
	}
	promise(t, scenario, "a retry from the dead letters succeeds after a fixed version, same id, each step an event",
		inv.State == "succeeded" && statuses(inv) == "500 500 200" && dl != nil && len(dl.Invocations) == 0 &&
			strings.Join(kinds, " ") == "async.dead_lettered async.dead_letter_retried",
		"state %s, attempts [%s], dead letters left %d, events %v", inv.State, statuses(inv), len(dl.Invocations), kinds)

	// Delete: one, then all.
	ids := []string{enqueue(t, c, "broken", `{"mode": "x"}`, client.AsyncOptions{})}
	finished(t, c, "broken", ids[0], 60*time.Second)
	if _, err := c.UpdateFunction(ctx, "broken", client.UpdateFunctionRequest{Async: &client.AsyncPatch{MaxRetries: client.Ptr(0)}}); err != nil {
		t.Fatal(err)
	}
	tn.waitServing(p, "broken", tn.upload(p, "broken", asyncHandler), 90*time.Second)
	for range 3 {
		ids = append(ids, enqueue(t, c, "broken", `{"mode": "fail"}`, client.AsyncOptions{}))
	}
	for _, id := range ids[1:] {
		finished(t, c, "broken", id, 60*time.Second)
	}
	errOne := c.DeleteDeadLetter(ctx, "broken", ids[1])
	errAgain := c.DeleteDeadLetter(ctx, "broken", ids[1])
	n, errAll := c.DeleteDeadLetters(ctx, "broken")
	dl, _ = c.ListDeadLetters(ctx, "broken", 0, "")
	promise(t, scenario, "dead letters are deleted one by one (404 the second time) or all at once",
		errOne == nil && client.IsNotFound(errAgain) && errAll == nil && n == 2 && len(dl.Invocations) == 0,
		"delete one: %v, again: %v, all: %d (%v), left %d", errOne, errAgain, n, errAll, len(dl.Invocations))
}

func asyncIdempotency(t *testing.T, w *world, p *plane, tn *tenant, c *client.Client) {
	const scenario = "async: idempotency"
	var wg sync.WaitGroup
	ids := make([]string, 50)
	codes := make([]int, 50)
	for i := range 50 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", tn.fnURL(p, "flaky")+"/k", strings.NewReader(`{"key": "once"}`))
			req.Header.Set("X-Sless-Invocation-Type", "async")
			req.Header.Set("Idempotency-Key", "one-key")
			resp, err := httpClient().Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var acc client.Accepted
			_ = json.NewDecoder(resp.Body).Decode(&acc.Accepted)
			ids[i], codes[i] = acc.InvocationID, resp.StatusCode
		})
	}
	wg.Wait()
	same, created := true, 0
	for i := range ids {
		same = same && ids[i] != "" && ids[i] == ids[0]
		if codes[i] == http.StatusAccepted {
			created++
		}
	}
	inv := finished(t, tn.api(p), "flaky", ids[0], 60*time.Second)
	time.Sleep(2 * time.Second) // a second run, if any, would have been delivered by now
	rows := w.logRows(t, ids[0], 1)
	seen := reportOf(t, c, "flaky").Seen["once"]
	promise(t, scenario, "50 concurrent enqueues with one key: one 202, 49 answers 200, the same id, one run",
		same && created == 1 && inv.State == "succeeded" && rows == "1:200" && seen == 1,
		"same id %v, 202s %d, state %s, log rows [%s], the function saw the key %d times", same, created, inv.State, rows, seen)

	// Another body under the key: 422.
	_, err := c.InvokeAsync(context.Background(), "flaky", []byte(`{"key": "other"}`), client.AsyncOptions{IdempotencyKey: "api-key"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.InvokeAsync(context.Background(), "flaky", []byte(`{"key": "different"}`), client.AsyncOptions{IdempotencyKey: "api-key"})
	promise(t, scenario, "a different body under a used key is 422", client.IsUnprocessable(err), "%v", err)
}

// report is what the handler's report mode answers.
type report struct {
	Most int            `json:"most"`
	Seen map[string]int `json:"seen"`
}

// reportOf asks fn's running process what it saw (a synchronous invoke).
func reportOf(t *testing.T, c *client.Client, fn string) report {
	t.Helper()
	res, err := c.Invoke(context.Background(), fn, []byte(`{"mode": "report"}`), "")
	if err != nil || res.Status != 200 {
		t.Fatalf("report of %s: %v %+v", fn, err, res)
	}
	var r report
	if err := json.Unmarshal(res.Body, &r); err != nil {
		t.Fatalf("report of %s: %s", fn, res.Body)
	}
	return r
}

func asyncBadInput(t *testing.T, w *world, p *plane, tn *tenant, c *client.Client, hook *callbackReceiver) {
	const scenario = "async: bad input"
	count := func() int {
		var n int
		if err := w.db.QueryRow(context.Background(), `SELECT count(*) FROM async_invocations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	post := func(url string, body io.Reader, headers ...string) (int, string) {
		req, _ := http.NewRequest("POST", url, body)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := httpClient().Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	before := count()
	typ, typBody := post(tn.fnURL(p, "flaky"), strings.NewReader(`{}`), "X-Sless-Invocation-Type", "later")
	big, _ := post(p.base()+"/async-fn/"+tn.ns+"/flaky", bytes.NewReader(make([]byte, 6<<20+1)))
	cb, cbBody := post(tn.fnURL(p, "flaky"), strings.NewReader(`{}`), "X-Sless-Invocation-Type", "async",
		"X-Sless-Callback-Url", "http://127.0.0.1:1/elsewhere")
	key, _ := post(tn.fnURL(p, "flaky"), strings.NewReader(`{}`), "X-Sless-Invocation-Type", "async", "Idempotency-Key", strings.Repeat("k", 256))
	after := count()
	promise(t, scenario, "unknown invocation type 400, body over the limit 413, callback off the allow-list 400, key over 255 bytes 400; nothing stored",
		typ == 400 && big == 413 && cb == 400 && key == 400 && after == before,
		"type %d (%.80s), body %d, callback %d (%.90s), key %d, rows %d → %d", typ, typBody, big, cb, cbBody, key, before, after)

	// A callback on the allow-list gets the final response.
	id := enqueue(t, c, "flaky", `{"key": "cb"}`, client.AsyncOptions{CallbackURL: "http://" + hook.addr + "/done"})
	got := hook.wait(t, id, 30*time.Second)
	inv := finished(t, c, "flaky", id, 30*time.Second)
	promise(t, scenario, "the callback URL gets the final response POSTed (status, body, invocation id)",
		got.Status == 200 && strings.Contains(got.Body, `"ok":"cb"`) && got.State == "succeeded" && inv.Callback != nil,
		"callback %+v; recorded %+v", got, inv.Callback)
}

func asyncConcurrency(t *testing.T, tn *tenant, c *client.Client) {
	const scenario = "async: max_concurrency"
	var ids []string
	for i := range 100 {
		ids = append(ids, enqueue(t, c, "bounded", fmt.Sprintf(`{"key": "c%d", "sleep": 0.05}`, i), client.AsyncOptions{}))
	}
	start := time.Now()
	ok := 0
	for _, id := range ids {
		if finished(t, c, "bounded", id, 3*time.Minute).State == "succeeded" {
			ok++
		}
	}
	r := reportOf(t, c, "bounded")
	promise(t, scenario, "max_concurrency 2 under 100 queued deliveries: never more than 2 at once (as the function counts)",
		ok == 100 && r.Most >= 1 && r.Most <= 2,
		"%d of 100 succeeded in %s; most at once %d", ok, secs(time.Since(start)), r.Most)
}

// asyncScale: a burst of queued invocations of a function with
// max_instances 3 and concurrency 1 runs on 3 instances at most, and does
// reach 3, as the control plane's scaler reports; every one succeeds.
func asyncScale(t *testing.T, c *client.Client) {
	const scenario = "async: scale"
	n := 300
	if sizes().name == "full" {
		n = 1000
	}
	start := time.Now()
	var ids []string
	for i := range n {
		ids = append(ids, enqueue(t, c, "burst", fmt.Sprintf(`{"key": "s%d", "sleep": 0.05}`, i), client.AsyncOptions{}))
	}
	most, stop, sampled := 0, make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if f, err := c.GetFunction(context.Background(), "burst"); err == nil && f.Instances != nil {
				most = max(most, f.Instances.Ready)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	ok := 0
	for _, id := range ids {
		if finished(t, c, "burst", id, 3*time.Minute).State == "succeeded" {
			ok++
		}
	}
	close(stop)
	<-sampled
	promise(t, scenario, fmt.Sprintf("a burst of %d queued invocations with max_instances 3: scaled to 3 instances, never more", n),
		ok == n && most == 3,
		"%d of %d succeeded in %s; most instances at once %d", ok, n, secs(time.Since(start)), most)
}

func asyncKill9(t *testing.T, w *world, p *plane, tn *tenant, c *client.Client) {
	const scenario = "async: kill -9"
	var ids []string
	for i := range 20 {
		ids = append(ids, enqueue(t, c, "flaky", fmt.Sprintf(`{"key": "k9-%d", "sleep": 1}`, i), client.AsyncOptions{}))
	}
	// Kill once several deliveries are running.
	var running int
	testutil.WaitFor(t, 30*time.Second, func() bool {
		_ = w.db.QueryRow(context.Background(), `SELECT count(*) FROM async_invocations WHERE state = 'running'`).Scan(&running)
		return running >= 5
	})
	p.kill9()
	p.start()
	c = tn.api(p)
	states := map[string]int{}
	again := 0 // delivered more than once: the kill cut their first attempt
	for _, id := range ids {
		inv := finished(t, c, "flaky", id, 2*time.Minute)
		states[inv.State]++
		if inv.Attempts[len(inv.Attempts)-1].Attempt > 1 {
			again++
		}
	}
	// Each invocation ends once: one final row, and no dead-letter event twice.
	var dupEvents int
	_ = w.db.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT data->>'invocation_id' FROM events
		WHERE type = 'async.dead_lettered' GROUP BY 1 HAVING count(*) > 1) d`).Scan(&dupEvents)
	var keys []string
	for k, n := range states {
		keys = append(keys, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(keys)
	promise(t, scenario, "every acknowledged invocation ends exactly once as succeeded or dead-lettered after a kill -9 and restart",
		states["succeeded"]+states["dead_lettered"] == len(ids) && dupEvents == 0,
		"%d acknowledged, %d running at the kill: %s (%d attempted again); invocations dead-lettered twice: %d",
		len(ids), running, strings.Join(keys, ", "), again, dupEvents)
}

// callbackReceiver is the test's callback target on loopback.
type callbackReceiver struct {
	addr string
	mu   sync.Mutex
	got  map[string]callbackBody
}

type callbackBody struct {
	InvocationID string `json:"invocation_id"`
	State        string `json:"state"`
	Status       int    `json:"status"`
	Body         string `json:"body"`
}

func newCallbackReceiver(t *testing.T) *callbackReceiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &callbackReceiver{addr: ln.Addr().String(), got: map[string]callbackBody{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var b callbackBody
		if err := json.NewDecoder(req.Body).Decode(&b); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		r.mu.Lock()
		r.got[b.InvocationID] = b
		r.mu.Unlock()
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *callbackReceiver) wait(t *testing.T, id string, limit time.Duration) callbackBody {
	t.Helper()
	var b callbackBody
	testutil.WaitFor(t, limit, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		var ok bool
		b, ok = r.got[id]
		return ok
	})
	return b
}
