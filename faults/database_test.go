package faults

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// checkAcked records whether every function whose creation the API
// acknowledged is in the read model (and so in the event store, written in
// the same transaction).
func checkAcked(t *testing.T, w *world, scenario string, tn *tenant, a *acked) {
	t.Helper()
	names := a.list()
	found := w.count(`SELECT count(*) FROM functions WHERE namespace = $1 AND name = ANY($2)`, tn.ns, names)
	promise(t, scenario, "every create answered 2xx is stored", found == len(names) && len(names) > 0,
		"%s acknowledged, %s stored", thousands(len(names)), thousands(found))
}

// checkInvocations records whether the invocation log holds a row for every
// 2xx answer of fn's /fn load (after the plane flushed it).
func checkInvocations(t *testing.T, w *world, scenario string, tn *tenant, fn string, l *load) {
	t.Helper()
	answers := l.count(is2xx)
	rows := w.count(`SELECT count(*) FROM invocations WHERE namespace = $1 AND function = $2 AND trigger_kind = 'http' AND status < 300`, tn.ns, fn)
	promise(t, scenario, "an invocation log row per 2xx answer of /fn", rows >= answers && answers > 0,
		"%s answers 2xx, %s rows (%s)", thousands(answers), thousands(rows), l.byStatus())
}

// TestDatabaseRestart: PostgreSQL stopped under /fn and API load, kept down,
// and started again on its port and data dir.
func TestDatabaseRestart(t *testing.T) {
	t.Parallel()
	const scenario = "database restart"
	f := sizes()
	w := newWorld(t)
	p := w.newPlane("a")
	p.start()
	tn := newTenant(t, p, "restart")
	tn.deploy(p, "echo", echoHandler(1), false, true)

	fnLoad := startLoad("fn", f.clients, getRequest(tn.fnURL(p, "echo")))
	var acks acked
	apiLoad := startLoad("api", max(1, f.clients/2), createRequest(tn, p, "c", &acks))
	time.Sleep(f.loadBefore)
	down := time.Now()
	w.stopPostgres()
	time.Sleep(f.pgDown)
	w.startPostgres()
	up := time.Now()
	// Load on until both loads answer 2xx again, and a while after.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		_, okA := apiLoad.recoveredAfter(up)
		_, okF := fnLoad.recoveredAfter(up)
		if okA && okF && apiLoad.count(is2xx) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(f.loadAfter)
	fnLoad.halt()
	apiLoad.halt()

	// While it was down: the API's answers.
	first, last, n503 := apiLoad.window(down, up, isStatus(http.StatusServiceUnavailable))
	withRA := 0
	for _, a := range apiLoad.snapshot() {
		if a.at.After(down) && !a.at.After(up) && a.status == 503 && a.retryAfter {
			withRA++
		}
	}
	_, _, other := apiLoad.window(down, up, func(s int) bool { return s != 503 && notOK(s) })
	promise(t, scenario, "API answers 503 with Retry-After while the database is down",
		n503 > 0 && withRA == n503 && other == 0,
		"%s×503 over %s, %s of them with Retry-After, %s other failures (all: %s); e.g. %.100q",
		thousands(n503), secs(last.Sub(first)), thousands(withRA), thousands(other), apiLoad.byStatus(), apiLoad.sample(503))
	rec, ok := apiLoad.recoveredAfter(up)
	recF, okF := fnLoad.recoveredAfter(up)
	promise(t, scenario, "recovery within seconds of the database's return", ok && okF && rec < 10*time.Second && recF < 10*time.Second,
		"database down %s; API 2xx again %s after its return, /fn %s", secs(up.Sub(down)), secs(rec), secs(recF))
	_, _, fnDown := fnLoad.window(down, up, is2xx)
	_, _, fnAll := fnLoad.window(down, up, anyStatus)
	promise(t, scenario, "/fn keeps serving while the database is down", fnDown == fnAll && fnAll > 0,
		"%s of %s answers 2xx during the outage", thousands(fnDown), thousands(fnAll))

	// SIGTERM flushes the invocation log.
	p.term()
	checkAcked(t, w, scenario, tn, &acks)
	checkInvocations(t, w, scenario, tn, "echo", fnLoad)
}

// TestTerminatedBackends: every connection of the server ended by
// pg_terminate_backend under load; a client sees nothing worse than a
// request to retry, and nothing is lost.
func TestTerminatedBackends(t *testing.T) {
	t.Parallel()
	const scenario = "terminated backends"
	f := sizes()
	w := newWorld(t)
	p := w.newPlane("a")
	p.start()
	tn := newTenant(t, p, "terminate")
	tn.deploy(p, "echo", echoHandler(1), false, true)

	// Each request is retried once, as a careful client does.
	retried := func(r request) request {
		return func(ctx context.Context, c *http.Client, i int64) (int, bool, string, error) {
			status, ra, body, err := r(ctx, c, i)
			if status == 0 || status >= 500 {
				time.Sleep(100 * time.Millisecond)
				return r(ctx, c, i)
			}
			return status, ra, body, err
		}
	}
	fnLoad := startLoad("fn", f.clients, retried(getRequest(tn.fnURL(p, "echo"))))
	var acks acked
	apiLoad := startLoad("api", max(1, f.clients/2), retried(createRequest(tn, p, "c", &acks)))
	reads := startLoad("reads", 1, retried(func(ctx context.Context, c *http.Client, _ int64) (int, bool, string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tn.functionsURL(p)+"/echo", nil)
		req.Header.Set("Authorization", "Bearer "+tn.token)
		return do(c, req)
	}))
	time.Sleep(f.loadBefore)
	rounds, ended := 3, 0
	if f.name == "full" {
		rounds = 10
	}
	for range rounds {
		ended += w.terminateServerBackends()
		time.Sleep(time.Second)
	}
	time.Sleep(f.loadAfter)
	fnLoad.halt()
	apiLoad.halt()
	reads.halt()
	failed := fnLoad.count(notOK) + apiLoad.count(notOK) + reads.count(notOK)
	promise(t, scenario, "no error beyond a retried request", failed == 0,
		"%d rounds ended %d connections; after one retry: /fn %s, creates %s, reads %s",
		rounds, ended, fnLoad.byStatus(), apiLoad.byStatus(), reads.byStatus())
	p.term()
	checkAcked(t, w, scenario, tn, &acks)
	checkInvocations(t, w, scenario, tn, "echo", fnLoad)
	_ = context.Background()
}
