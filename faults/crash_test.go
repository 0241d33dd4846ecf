package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// TestCrashAndStop: the control plane killed (-9) or stopped (SIGTERM) while
// a build, a rollout and two job runs are in progress; after a restart the
// build ends, the rollout converges and the runs end as the README says, each
// attempt in the invocation log.
func TestCrashAndStop(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			t.Parallel()
			crashDuring(t, how)
		})
	}
}

func crashDuring(t *testing.T, how string) {
	scenario := how + " mid-work"
	w := newWorld(t)
	p := w.newPlane("a", "SLESS_SHUTDOWN_TIMEOUT=2s")
	p.start()
	ctx := context.Background()
	// A namespace each: builds of one namespace wait for each other.
	jobs := newTenant(t, p, "jobs")
	jobs.deploy(p, "safe", sleepHandler, true, false)
	jobs.deploy(p, "unsafe", sleepHandler, false, false)
	builds := newTenant(t, p, "builds")
	builds.create(p, "bld", false, true)
	rolls := newTenant(t, p, "rolls")
	rolls.create(p, "roll", false, true)

	// roll: built in 8 s, then rolled out in 8 s (its import sleeps);
	// bld: built in 14 s; the runs take 20 s.
	rollV := rolls.upload(p, "roll", slowImportHandler(8, 1))
	bldV := builds.upload(p, "bld", slowImportHandler(14, 1))
	jc := jobs.api(p)
	for _, j := range []string{"safe", "unsafe"} {
		if _, err := jc.CreateJob(ctx, client.CreateJobRequest{Name: j + "-job", Function: j, Event: json.RawMessage(`{"sleep": 20}`), RunID: 1}); err != nil {
			t.Fatal(err)
		}
	}
	bc, rc := builds.api(p), rolls.api(p)
	inProgress := func() (string, bool) {
		bv, err1 := bc.GetVersion(ctx, "bld", bldV)
		rv, err2 := rc.GetVersion(ctx, "roll", rollV)
		rf, err3 := rc.GetFunction(ctx, "roll")
		sj, err4 := jc.GetJob(ctx, "safe-job")
		uj, err5 := jc.GetJob(ctx, "unsafe-job")
		if err := firstErr(err1, err2, err3, err4, err5); err != nil {
			return err.Error(), false
		}
		state := fmt.Sprintf("build %s; roll v%d build %s serving v%d; runs %s, %s", bv.BuildStatus, rollV, rv.BuildStatus, rf.ServingVersion, sj.Phase, uj.Phase)
		return state, bv.BuildStatus == domain.BuildStatusBuilding && rv.BuildStatus == domain.BuildStatusSucceeded && rf.ServingVersion != rollV &&
			sj.Phase == domain.JobPhaseRunning && uj.Phase == domain.JobPhaseRunning
	}
	var state string
	deadline := time.Now().Add(30 * time.Second)
	for ok := false; !ok && time.Now().Before(deadline); {
		state, ok = inProgress()
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("at the %s: %s", how, state)
	if how == "SIGTERM" {
		t.Logf("stopped in %s", secs(p.term()))
	} else {
		p.kill9()
	}
	stopped := time.Now()
	p.start()
	restarted := time.Now()
	t.Logf("restarted in %s", secs(restarted.Sub(stopped)))

	// The rollout converges: roll serves v1.
	var served time.Duration
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if s, body, _ := get(httpClient(), rolls.fnURL(p, "roll")); s == 200 && versionOf(body) == 1 {
			served = time.Since(restarted)
			break
		}
	}
	// The API says so too once the rollout's outcome is recorded.
	var rf *client.Function
	var converged time.Duration
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if rf, _ = rc.GetFunction(ctx, "roll"); rf != nil && rf.ServingVersion == rollV && rf.Phase == domain.PhaseReady {
			converged = time.Since(restarted)
			break
		}
	}
	promise(t, scenario, "a rollout in progress converges after the restart", served > 0 && converged > 0,
		"/fn serves v1 %s after the restart, serving_version %d %s after it", secs(served), servingOf(rf), secs(converged))

	// The build ends (never stuck Building).
	var bv *client.Version
	for end := time.Now().Add(90 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if v, err := bc.GetVersion(ctx, "bld", bldV); err == nil && v.BuildStatus != domain.BuildStatusBuilding && v.BuildStatus != domain.BuildStatusQueued {
			bv = v
			break
		}
	}
	if bv == nil {
		w.logJobs("build")
	}
	promise(t, scenario, "a build in progress ends after the restart, never stuck Building", bv != nil && bv.BuildStatus == domain.BuildStatusSucceeded,
		"at the stop: %s; build %s %s after the restart", state, statusOf(bv), secs(time.Since(restarted)))

	// The runs: retry_safe runs again; the other fails as interrupted; each
	// attempt is in the invocation log.
	wantMsg := "interrupted by shutdown"
	if how == "kill -9" {
		wantMsg = "interrupted by a crash"
	}
	safe := waitJob(t, jc, "safe-job", 90*time.Second)
	unsafe := waitJob(t, jc, "unsafe-job", 90*time.Second)
	if err := p.termErr(); err != "" { // flushes the invocation log
		t.Log(err)
	}
	safeRows := w.invocationStatuses(jobs.ns, "safe", "safe-job/1")
	unsafeRows := w.invocationStatuses(jobs.ns, "unsafe", "unsafe-job/1")
	promise(t, scenario, "a retry_safe run runs again; each attempt logged (503, then 200)",
		safe.Phase == domain.JobPhaseSucceeded && safeRows == "503 200",
		"%s %q; invocation rows: [%s]", safe.Phase, safe.Message, safeRows)
	promise(t, scenario, "a run not retry_safe fails as "+wantMsg+"; its attempt logged (503)",
		unsafe.Phase == domain.JobPhaseFailed && strings.Contains(unsafe.Message, wantMsg) && unsafeRows == "503",
		"%s %q; invocation rows: [%s]", unsafe.Phase, unsafe.Message, unsafeRows)
}

// waitJob waits until job name has finished and returns it.
func waitJob(t *testing.T, c *client.Client, name string, limit time.Duration) *client.Job {
	t.Helper()
	var j *client.Job
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		var err error
		if j, err = c.GetJob(context.Background(), name); err == nil && (j.Phase == domain.JobPhaseSucceeded || j.Phase == domain.JobPhaseFailed) {
			return j
		}
	}
	if j == nil {
		j = &client.Job{Name: name, Phase: "unknown"}
	}
	return j
}

// invocationStatuses lists the statuses of fn's invocation rows with path,
// oldest first: "503 200".
func (w *world) invocationStatuses(ns, fn, path string) string {
	w.t.Helper()
	rows, err := w.db.Query(context.Background(), `SELECT status FROM invocations WHERE namespace = $1 AND function = $2 AND path = $3 ORDER BY started_at`, ns, fn, path)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s int
		if err := rows.Scan(&s); err != nil {
			w.t.Fatal(err)
		}
		out = append(out, fmt.Sprint(s))
	}
	return strings.Join(out, " ")
}

// termErr stops the plane with SIGTERM, saying so when it took long.
func (p *plane) termErr() string {
	if d := p.term(); d > 20*time.Second {
		return fmt.Sprintf("sless serve %s took %s to stop", p.name, secs(d))
	}
	return ""
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func statusOf(v *client.Version) string {
	if v == nil {
		return "still Building or Queued"
	}
	return fmt.Sprintf("%s %q", v.BuildStatus, v.Message)
}

func servingOf(f *client.Function) int {
	if f == nil {
		return -1
	}
	return f.ServingVersion
}
