package command_test

import (
	"strings"
	"testing"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
)

// The Tx commands run in a transaction of the caller's, as the workers do
// (they complete their River job in it): workerMeta is what they record.
var workerMeta = store.Metadata{Actor: "worker:test", CausationID: "river_job:1"}

// inTx runs fn in one transaction of the workers' kind and returns the
// events it appended.
func (f *fixture) inTx(fn func(tx *store.Tx) error) []store.Event {
	f.t.Helper()
	evs, err := f.b.Store.Execute(f.ctx, workerMeta, fn)
	if err != nil {
		f.t.Fatal(err)
	}
	return evs
}

// eventTypes lists the types of evs, space-separated, each recorded with
// the caller's metadata.
func (f *fixture) eventTypes(evs []store.Event) string {
	f.t.Helper()
	s := make([]string, len(evs))
	for i, ev := range evs {
		s[i] = ev.Type
		if ev.Metadata != workerMeta {
			f.t.Errorf("%s recorded %+v, want the caller's %+v", ev.Type, ev.Metadata, workerMeta)
		}
	}
	return strings.Join(s, " ")
}

func TestBuildOutcomeTx(t *testing.T) {
	f := setup(t)
	f.createFunction("hello")
	f.upload("hello", "def handle(e, c): return 1\n")
	ref := f.ref("hello")

	var v domain.Version
	var ok bool
	evs := f.inTx(func(tx *store.Tx) (err error) {
		v, ok, err = f.cmd.StartBuildTx(f.ctx, tx, ref, 1, 1)
		return err
	})
	if !ok || v.Number != 1 || v.Digest == "" || v.ContextKey == "" || f.eventTypes(evs) != domain.EventBuildStarted {
		t.Fatalf("start: %+v ok=%v, events %q", v, ok, f.eventTypes(evs))
	}
	// A rerun builds again and records nothing; a build queued for another
	// incarnation of the function does not build this one.
	for _, c := range []struct {
		incarnation int
		ok          bool
	}{{1, true}, {0, true}, {2, false}} {
		evs = f.inTx(func(tx *store.Tx) (err error) {
			_, ok, err = f.cmd.StartBuildTx(f.ctx, tx, ref, 1, c.incarnation)
			return err
		})
		if ok != c.ok || len(evs) != 0 {
			t.Fatalf("start again for incarnation %d: ok=%v, events %q", c.incarnation, ok, f.eventTypes(evs))
		}
	}

	var fn domain.Function
	evs = f.inTx(func(tx *store.Tx) (err error) {
		fn, err = f.cmd.RecordBuildOutcomeTx(f.ctx, tx, ref, 1, command.BuildOutcome{Image: "img:1", Log: "built"})
		return err
	})
	if f.eventTypes(evs) != domain.EventBuildSucceeded+" "+domain.EventVersionActivated || fn.ActiveVersion != 1 || fn.Phase != domain.PhaseReady {
		t.Fatalf("success: %+v, events %q", fn, f.eventTypes(evs))
	}
	// The activation's rollout is queued with the outcome.
	f.wantJobs(`build available {"version": 1, "function": "hello", "incarnation": 1}`, `rollout available {"function": "hello"}`)
	evs = f.inTx(func(tx *store.Tx) error {
		_, err := f.cmd.RecordBuildOutcomeTx(f.ctx, tx, ref, 1, command.BuildOutcome{Failed: true, Message: "late"})
		return err
	})
	if len(evs) != 0 {
		t.Fatalf("a second outcome recorded %q", f.eventTypes(evs))
	}
	evs = f.inTx(func(tx *store.Tx) (err error) {
		_, ok, err = f.cmd.StartBuildTx(f.ctx, tx, ref, 1, 1)
		return err
	})
	if ok || len(evs) != 0 {
		t.Fatalf("start of a built version: ok=%v, events %q", ok, f.eventTypes(evs))
	}

	// A failed build of a newer version leaves the active one; without a
	// message, the log is the message.
	f.upload("hello", "def handle(e, c): return 2\n")
	evs = f.inTx(func(tx *store.Tx) (err error) {
		fn, err = f.cmd.RecordBuildOutcomeTx(f.ctx, tx, ref, 2, command.BuildOutcome{Failed: true, Log: "SyntaxError"})
		return err
	})
	if f.eventTypes(evs) != domain.EventBuildFailed || fn.ActiveVersion != 1 || fn.Phase != domain.PhaseReady ||
		fn.LastBuildFailure != (domain.BuildFailure{Version: 2, Message: "SyntaxError"}) {
		t.Fatalf("failure: %+v, events %q", fn, f.eventTypes(evs))
	}

	_, err := f.b.Store.Execute(f.ctx, workerMeta, func(tx *store.Tx) error {
		_, err := f.cmd.RecordBuildOutcomeTx(f.ctx, tx, ref, 9, command.BuildOutcome{Image: "img:9"})
		return err
	})
	testutil.RequireCode(t, err, domain.ENOTFOUND)

	// A function deleted while its version built records nothing.
	f.upload("hello", "def handle(e, c): return 3\n")
	if err := f.cmd.DeleteFunction(f.ctx, meta, ref); err != nil {
		t.Fatal(err)
	}
	evs = f.inTx(func(tx *store.Tx) error {
		_, err := f.cmd.RecordBuildOutcomeTx(f.ctx, tx, ref, 3, command.BuildOutcome{Image: "img:3"})
		return err
	})
	if len(evs) != 0 {
		t.Fatalf("the build of a deleted function recorded %q", f.eventTypes(evs))
	}
}

func TestRunOutcomeTx(t *testing.T) {
	f := setup(t)
	f.createFunction("worker")
	if _, err := f.cmd.CreateJob(f.ctx, meta, command.CreateJobInput{Namespace: f.ns, Name: "prep",
		Spec: domain.JobSpec{Function: "worker", RunID: 1}}); err != nil {
		t.Fatal(err)
	}
	ref := f.ref("prep")
	start := func(runID int64) (domain.Job, []store.Event) {
		var j domain.Job
		evs := f.inTx(func(tx *store.Tx) (err error) {
			j, err = f.cmd.StartRunTx(f.ctx, tx, ref, runID, 1)
			return err
		})
		return j, evs
	}
	record := func(runID int64, out command.RunOutcome) (domain.Job, []store.Event) {
		var j domain.Job
		evs := f.inTx(func(tx *store.Tx) (err error) {
			j, err = f.cmd.RecordRunOutcomeTx(f.ctx, tx, ref, runID, out)
			return err
		})
		return j, evs
	}

	if j, evs := start(1); j.Phase != domain.JobPhaseRunning || j.Version != 1 || f.eventTypes(evs) != domain.EventJobStarted {
		t.Fatalf("start: %+v, events %q", j, f.eventTypes(evs))
	}
	if j, evs := start(1); j.Phase != domain.JobPhaseRunning || len(evs) != 0 {
		t.Fatalf("start again: %+v, events %q", j, f.eventTypes(evs))
	}
	j, evs := record(1, command.RunOutcome{OK: true, Result: `{"rows": 3}`, Output: "loading\n{\"rows\": 3}\n"})
	if j.Phase != domain.JobPhaseSucceeded || j.Message != `{"rows": 3}` || j.Output == "" || f.eventTypes(evs) != domain.EventJobSucceeded {
		t.Fatalf("success: %+v, events %q", j, f.eventTypes(evs))
	}
	if j, evs := record(1, command.RunOutcome{Message: "late"}); j.Phase != domain.JobPhaseSucceeded || len(evs) != 0 {
		t.Fatalf("a second outcome: %+v, events %q", j, f.eventTypes(evs))
	}

	// A run that never started can fail (it could not run); the outcome of a
	// run superseded by a newer one records nothing.
	if _, err := f.cmd.RerunJob(f.ctx, meta, ref); err != nil {
		t.Fatal(err)
	}
	if _, evs := record(1, command.RunOutcome{OK: true}); len(evs) != 0 {
		t.Fatalf("the outcome of a superseded run recorded %q", f.eventTypes(evs))
	}
	j, evs = record(2, command.RunOutcome{Message: "function \"worker\" has no active built version to run"})
	if j.Phase != domain.JobPhaseFailed || !strings.Contains(j.Message, "no active built version") || f.eventTypes(evs) != domain.EventJobFailed {
		t.Fatalf("failure: %+v, events %q", j, f.eventTypes(evs))
	}
	// Outcomes queue no run: only the two runs asked for are there.
	f.wantJobs(`run_job available {"job": "prep", "run_id": 1, "incarnation": 1}`,
		`run_job available {"job": "prep", "run_id": 2, "incarnation": 1}`)

	if err := f.cmd.DeleteJob(f.ctx, meta, ref); err != nil {
		t.Fatal(err)
	}
	if j, evs := record(2, command.RunOutcome{Message: "cancelled"}); j.Exists || len(evs) != 0 {
		t.Fatalf("the outcome of a deleted job's run: %+v, events %q", j, f.eventTypes(evs))
	}
}

// loadFunctionTx loads function name and its triggers in tx, as the rollout
// worker does before it records an outcome.
func (f *fixture) loadFunctionTx(tx *store.Tx, name string) (*domain.Function, []domain.Trigger) {
	f.t.Helper()
	fn := domain.NewFunction(f.ns, name)
	if err := tx.Load(f.ctx, domain.FunctionStream(f.ns, name), fn); err != nil {
		f.t.Fatal(err)
	}
	listed, err := tx.ListTriggers(f.ctx, f.ns, name)
	if err != nil {
		f.t.Fatal(err)
	}
	var triggers []domain.Trigger
	for _, l := range listed {
		tr := domain.NewTrigger(f.ns, l.Name)
		if err := tx.Load(f.ctx, domain.TriggerStream(f.ns, l.Name), tr); err != nil {
			f.t.Fatal(err)
		}
		triggers = append(triggers, *tr)
	}
	return fn, triggers
}

func TestRolloutOutcomeTx(t *testing.T) {
	f := setup(t)
	f.createFunction("hello")
	f.upload("hello", "def handle(e, c): return 1\n")
	f.build("hello", 1)
	for _, spec := range []domain.TriggerSpec{{Type: "http", Function: "hello", Enabled: true}, {Type: "cron", Function: "hello", Schedule: "0 3 * * *", Enabled: true}} {
		if _, err := f.cmd.CreateTrigger(f.ctx, meta, command.CreateTriggerInput{Namespace: f.ns, Name: "t-" + spec.Type, Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.b.Pool.Exec(f.ctx, `DELETE FROM river_job WHERE args->>'namespace' = $1`, f.ns); err != nil {
		t.Fatal(err)
	}
	record := func(out command.RolloutOutcome) []store.Event {
		return f.inTx(func(tx *store.Tx) error {
			fn, triggers := f.loadFunctionTx(tx, "hello")
			return f.cmd.RecordRolloutTx(f.ctx, tx, fn, triggers, out)
		})
	}
	active := func() map[string]bool {
		ts, err := f.b.Store.ListTriggers(f.ctx, f.ns, "hello")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, tr := range ts {
			m[tr.Name] = tr.Active
		}
		return m
	}

	// Running: the http trigger is active, the cron trigger's schedule follows.
	evs := record(command.RolloutOutcome{Version: 1, Replicas: 1, Endpoint: "http://127.0.0.1:9"})
	if got := f.eventTypes(evs); got != domain.EventRolloutCompleted+" "+domain.EventTriggerActive {
		t.Fatalf("events %q", got)
	}
	fn, err := f.b.Store.GetFunction(f.ctx, f.ns, "hello")
	if err != nil || fn.ServingVersion != 1 || fn.Endpoint != "http://127.0.0.1:9" {
		t.Fatalf("after the rollout: %+v %v", fn, err)
	}
	if a := active(); !a["t-http"] || a["t-cron"] {
		t.Fatalf("active after the rollout: %v", a)
	}
	f.wantJobs(`schedule available {"trigger": "t-cron"}`)
	if evs := record(command.RolloutOutcome{Version: 1, Replicas: 1, Endpoint: "http://127.0.0.1:9"}); len(evs) != 0 {
		t.Fatalf("the same outcome again recorded %q", f.eventTypes(evs))
	}

	// Failed: the function says why and its http trigger is not active.
	evs = record(command.RolloutOutcome{Version: 1, Replicas: 1, Failed: true, Message: "crash loop"})
	if got := f.eventTypes(evs); got != domain.EventRolloutFailed+" "+domain.EventTriggerActive {
		t.Fatalf("events %q", got)
	}
	if fn, err = f.b.Store.GetFunction(f.ctx, f.ns, "hello"); err != nil || fn.Phase != domain.PhaseFailed || fn.Message != "crash loop" {
		t.Fatalf("after a failed rollout: %+v %v", fn, err)
	}
	if a := active(); a["t-http"] {
		t.Fatalf("active after a failed rollout: %v", a)
	}

	// A change committed after the caller loaded the function makes the
	// attempt lose the race, and the next one decides on fresh state.
	attempts := 0
	f.inTx(func(tx *store.Tx) error {
		attempts++
		fn, triggers := f.loadFunctionTx(tx, "hello")
		if attempts == 1 {
			mem := 256
			if _, err := f.cmd.UpdateFunction(f.ctx, meta, command.UpdateFunctionInput{Ref: f.ref("hello"), Patch: command.FunctionPatch{MemoryMB: &mem}}); err != nil {
				return err
			}
		}
		err := f.cmd.RecordRolloutTx(f.ctx, tx, fn, triggers, command.RolloutOutcome{Version: fn.ActiveVersion, Replicas: 1, Endpoint: "http://127.0.0.1:9"})
		if attempts == 1 && domain.ErrorCode(err) != domain.ECONFLICT {
			t.Errorf("the outcome on stale state: %v, want a conflict", err)
		}
		return err
	})
	if attempts != 2 {
		t.Fatalf("%d attempts, want 2", attempts)
	}

	// The schedule worker records what it found of a cron trigger; the same
	// again records nothing.
	for i, want := range []string{domain.EventTriggerActive, ""} {
		evs = f.inTx(func(tx *store.Tx) error {
			tr := domain.NewTrigger(f.ns, "t-cron")
			if err := tx.Load(f.ctx, domain.TriggerStream(f.ns, "t-cron"), tr); err != nil {
				return err
			}
			return f.cmd.SetTriggerActiveTx(f.ctx, tx, tr, true)
		})
		if got := f.eventTypes(evs); got != want {
			t.Fatalf("SetTriggerActiveTx #%d recorded %q, want %q", i+1, got, want)
		}
	}
	if a := active(); !a["t-cron"] {
		t.Fatalf("active after SetTriggerActiveTx: %v", a)
	}
}
