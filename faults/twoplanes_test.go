package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// TestTwoControlPlanes: two `sless serve` on one PostgreSQL and one S3
// endpoint, each with its own data dir and port.
func TestTwoControlPlanes(t *testing.T) {
	t.Parallel()
	const scenario = "two control planes"
	f := sizes()
	w := newWorld(t)
	a, b := w.newPlane("a"), w.newPlane("b")
	a.start()
	b.start()
	ctx := context.Background()
	tn := newTenant(t, a, "two")
	ca, cb := tn.api(a), tn.api(b)

	// A cron trigger every minute, counted at the end.
	tn.deploy(a, "ticker", echoHandler(1), false, false)
	cronFrom := time.Now()
	if _, err := ca.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "tick", Type: domain.TriggerCron, Function: "ticker", Schedule: "* * * * *"}); err != nil {
		t.Fatal(err)
	}

	// Each answers the API and /fn.
	tn.deploy(a, "echo", echoHandler(1), false, true)
	fa, fb := tn.fnURL(a, "echo"), tn.fnURL(b, "echo")
	sa, bodyA, _ := get(httpClient(), fa)
	sb, bodyB, _ := get(httpClient(), fb)
	fns, errB := cb.ListFunctions(ctx)
	promise(t, scenario, "each answers the API and /fn", sa == 200 && sb == 200 && versionOf(bodyA) == 1 && versionOf(bodyB) == 1 && errB == nil && len(fns) == 2,
		"/fn: a %d %s, b %d %s; b lists %d functions (%v)", sa, bodyA, sb, bodyB, len(fns), errOrOK(errB))

	// A job runs once.
	tn.deploy(a, "sleeper", sleepHandler, true, false)
	if _, err := cb.CreateJob(ctx, client.CreateJobRequest{Name: "once", Function: "sleeper", Event: json.RawMessage(`{"sleep": 1}`), RunID: 1}); err != nil {
		t.Fatal(err)
	}
	once := waitJob(t, ca, "once", 60*time.Second)

	// A route change through one is served by the other within a second.
	v2 := tn.upload(a, "echo", echoHandler(2))
	servingErr := tn.serving(a, "echo", v2, 60*time.Second)
	toV2 := time.Duration(-1)
	if servingErr == nil {
		deployed := time.Now()
		if toV2 = waitVersion(fb, 2, 10*time.Second); toV2 >= 0 {
			toV2 = time.Since(deployed)
		}
	}
	toV1 := time.Duration(-1)
	if _, err := cb.Rollback(ctx, "echo", 1); err != nil {
		t.Errorf("rollback through b: %v", err)
	} else {
		toV1 = waitVersion(fa, 1, 10*time.Second)
	}
	promise(t, scenario, "a route change through one is served by the other within a second",
		servingErr == nil && toV2 >= 0 && toV2 <= time.Second && toV1 >= 0 && toV1 <= time.Second,
		"v2 through a (%s), served by b %s after a said Ready; rollback to v1 through b, a serves v1 %s after its answer",
		errOrOK(servingErr), durOrNever(toV2), durOrNever(toV1))

	// kill -9 of a under load on b, while a runs jobs.
	onA := func() int {
		return w.count(`SELECT count(*) FROM river_job WHERE state = 'running' AND attempted_by[array_length(attempted_by, 1)] LIKE $1`, riverClientOf(a.pid()))
	}
	// Both planes take jobs: more are created, three at a time, until a
	// runs one (b may take a round whole).
	var long []string
	for round := 0; round < 5 && onA() == 0; round++ {
		for range 3 {
			j := fmt.Sprintf("long-%d", len(long)+1)
			if _, err := ca.CreateJob(ctx, client.CreateJobRequest{Name: j, Function: "sleeper", Event: json.RawMessage(`{"sleep": 6}`), RunID: 1}); err != nil {
				t.Fatal(err)
			}
			long = append(long, j)
		}
		for end := time.Now().Add(3 * time.Second); onA() == 0 && time.Now().Before(end); {
			time.Sleep(50 * time.Millisecond)
		}
	}
	running := onA()
	fnLoad := startLoad("fn", f.clients, getRequest(fb))
	var acks acked
	apiLoad := startLoad("api", max(1, f.clients/2), createRequest(tn, b, "c", &acks))
	time.Sleep(f.loadBefore)
	killed := time.Now()
	a.kill9()
	var rescued time.Duration = -1
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if onA() == 0 {
			rescued = time.Since(killed)
			break
		}
	}
	time.Sleep(f.loadAfter)
	fnLoad.halt()
	apiLoad.halt()
	var unfinished []string
	for _, j := range long {
		if job := waitJob(t, cb, j, 60*time.Second); job.Phase != domain.JobPhaseSucceeded {
			unfinished = append(unfinished, j+" "+string(job.Phase)+" "+job.Message)
		}
	}
	finished := time.Since(killed)
	promise(t, scenario, "kill -9 of one: the other serves on", fnLoad.count(notOK) == 0 && apiLoad.count(notOK) == 0,
		"b's /fn %s; b's creates %s; e.g. %.160q", fnLoad.byStatus(), apiLoad.byStatus(), fnLoad.sample(503)+apiLoad.sample(503))
	promise(t, scenario, "kill -9 of one: its River jobs rescued within seconds, its runs finish", running > 0 && rescued >= 0 && rescued < 10*time.Second && len(unfinished) == 0,
		"%d jobs running on a at the kill, rescued %s after it; %d retry_safe runs Succeeded by %s %v", running, durOrNever(rescued), len(long), secs(finished), unfinished)
	checkAcked(t, w, scenario, tn, &acks)

	// Leader-only work ran once: the job, and each cron slot. A slot fires
	// at its minute boundary, or, when the leader died near it, once the
	// survivor has taken the lead (River's leader lease) and ticks: wait for
	// one, then a little more for a second run of it, which must not come.
	fired := func() bool {
		return w.count(`SELECT count(*) FROM invocations WHERE namespace = $1 AND function = 'ticker' AND trigger_kind = 'cron'`, tn.ns) > 0
	}
	for deadline := cronFrom.Truncate(time.Minute).Add(time.Minute + 45*time.Second); !fired() && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	tick, _ := cb.GetTrigger(ctx, "tick")
	ticker, _ := cb.GetFunction(ctx, "ticker")
	b.term() // flushes the invocation log
	onceRows := w.invocationStatuses(tn.ns, "sleeper", "once/1")
	promise(t, scenario, "a job runs once", once.Phase == domain.JobPhaseSucceeded && onceRows == "200",
		"%s; invocation rows [%s]", once.Phase, onceRows)
	slots, runs := 0, 0
	rows, err := w.db.Query(ctx, `SELECT date_trunc('minute', started_at), count(*) FROM invocations
		WHERE namespace = $1 AND function = 'ticker' AND trigger_kind = 'cron' GROUP BY 1`, tn.ns)
	if err != nil {
		t.Fatal(err)
	}
	twice := 0
	for rows.Next() {
		var slot time.Time
		var n int
		if err := rows.Scan(&slot, &n); err != nil {
			t.Fatal(err)
		}
		slots++
		runs += n
		if n > 1 {
			twice++
		}
	}
	rows.Close()
	state := "unknown"
	if tick != nil && ticker != nil {
		state = fmt.Sprintf("trigger active %v, function %s %q", tick.Active, ticker.Phase, ticker.Message)
	}
	if slots == 0 {
		w.logJobs("cron_tick")
		w.logJobs("cron_run")
	}
	promise(t, scenario, "a cron trigger fires once per slot", slots > 0 && twice == 0,
		"%d slots, %d runs, %d slots run more than once (%s)", slots, runs, twice, state)
}

// waitVersion polls url until it answers {"v": v} and returns how long that
// took, -1 when it did not within limit.
func waitVersion(url string, v int, limit time.Duration) time.Duration {
	start := time.Now()
	c := &http.Client{Timeout: 5 * time.Second}
	for time.Since(start) < limit {
		if s, body, _ := get(c, url); s == 200 && versionOf(body) == v {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1
}

func durOrNever(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return secs(d)
}
