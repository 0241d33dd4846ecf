package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// TestProjectionsEqualFoldOnRandomHistories replays random event sequences —
// late results of old builds, rollouts of versions no longer active, runs
// reported out of order, deletes and re-creations — through both append paths
// (a command with its aggregate, and a plain Append that leaves the projector
// to fold), in random batches, then checks every read-model row against
// folding the stream in domain; and again after a rebuild from the log.
func TestProjectionsEqualFoldOnRandomHistories(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t) // own database: the rebuild truncates every read model
	p := setupProjected(t, pool)
	ctx := context.Background()
	const histories = 40
	for seed := range uint64(histories) {
		rng := rand.New(rand.NewPCG(seed, 1))
		name := fmt.Sprintf("r%d", seed)
		p.appendRandomly(t, rng, domain.FunctionStream(p.ns, name), randomFunctionEvents(rng, p, name))
		p.appendRandomly(t, rng, domain.TriggerStream(p.ns, name), randomTriggerEvents(rng, p, name))
		p.appendRandomly(t, rng, domain.JobStream(p.ns, name), randomJobEvents(rng, p, name))
	}
	check := func(when string) {
		for seed := range histories {
			p.requireFoldEqualsRows(t, fmt.Sprintf("r%d", seed), when)
		}
	}
	check("after the appends")
	if _, err := p.RebuildProjections(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a rebuild")
}

// appendRandomly appends evs to stream in batches of 1 to 3 events, each batch
// by a command (Execute, with the aggregate) or by a plain Append.
func (p *projected) appendRandomly(tb testing.TB, rng *rand.Rand, stream string, evs []domain.Event) {
	tb.Helper()
	ctx := context.Background()
	for len(evs) > 0 {
		n := min(1+rng.IntN(3), len(evs))
		batch := evs[:n]
		evs = evs[n:]
		if rng.IntN(2) == 0 {
			_, err := p.Execute(ctx, store.Metadata{Actor: "cmd"}, func(tx *store.Tx) error {
				agg := aggregateOf(tb, stream)
				if err := tx.Load(ctx, stream, agg); err != nil {
					return err
				}
				return tx.Append(ctx, stream, agg, batch)
			})
			if err != nil {
				tb.Fatalf("command on %s: %v", stream, err)
			}
			continue
		}
		v, err := p.StreamVersion(ctx, stream)
		if err != nil {
			tb.Fatal(err)
		}
		plain := make([]store.NewEvent, len(batch))
		for i, e := range batch {
			plain[i] = store.NewEvent{Type: e.EventType(), Data: e}
		}
		if _, err := p.Append(ctx, stream, v, plain, store.Metadata{Actor: "plain"}); err != nil {
			tb.Fatalf("append to %s: %v", stream, err)
		}
	}
}

// aggregateOf is store.NewAggregate for the streams the test makes.
func aggregateOf(tb testing.TB, stream string) store.Aggregate {
	tb.Helper()
	agg, err := store.NewAggregate(stream)
	if err != nil {
		tb.Fatal(err)
	}
	return agg
}

// fold folds the stream of one object from the log.
func (p *projected) fold(tb testing.TB, stream string) store.Aggregate {
	tb.Helper()
	agg := aggregateOf(tb, stream)
	evs, err := p.ReadStream(context.Background(), stream, 1)
	if err != nil {
		tb.Fatal(err)
	}
	if err := store.Fold(evs, agg); err != nil {
		tb.Fatal(err)
	}
	return agg
}

// requireFoldEqualsRows fails unless the function, trigger and job called
// name read back from the read models exactly as their folded streams.
func (p *projected) requireFoldEqualsRows(tb testing.TB, name, when string) {
	tb.Helper()
	ctx := context.Background()
	f := p.fold(tb, domain.FunctionStream(p.ns, name)).(*domain.Function)
	row, err := p.GetFunction(ctx, p.ns, name)
	if !f.Exists {
		if domain.ErrorCode(err) != domain.ENOTFOUND {
			tb.Errorf("%s: function %s is deleted in the log, read model has %+v (%v)", when, name, row, err)
		}
	} else {
		if err != nil {
			tb.Fatalf("%s: function %s: %v", when, name, err)
		}
		want := *f
		want.Versions, want.Incarnation = nil, 0
		if !reflect.DeepEqual(row, want) {
			tb.Errorf("%s: function %s\nread model  %+v\ndomain fold %+v", when, name, row, want)
		}
	}
	vs, err := p.ListVersions(ctx, p.ns, name)
	if err != nil {
		tb.Fatal(err)
	}
	if len(vs) != len(f.Versions) {
		tb.Errorf("%s: function %s: %d versions in the read model, %d in the fold", when, name, len(vs), len(f.Versions))
	} else {
		for i, v := range vs {
			if want := f.Versions[len(f.Versions)-1-i]; !reflect.DeepEqual(v, want) {
				tb.Errorf("%s: %s v%d\nread model  %+v\ndomain fold %+v", when, name, v.Number, v, want)
			}
		}
	}

	tr := p.fold(tb, domain.TriggerStream(p.ns, name)).(*domain.Trigger)
	trow, err := p.GetTrigger(ctx, p.ns, name)
	switch {
	case !tr.Exists && domain.ErrorCode(err) != domain.ENOTFOUND:
		tb.Errorf("%s: trigger %s is deleted in the log, read model has %+v (%v)", when, name, trow, err)
	case tr.Exists && (err != nil || !reflect.DeepEqual(trow, *tr)):
		tb.Errorf("%s: trigger %s\nread model  %+v (%v)\ndomain fold %+v", when, name, trow, err, *tr)
	}

	j := p.fold(tb, domain.JobStream(p.ns, name)).(*domain.Job)
	jrow, err := p.GetJob(ctx, p.ns, name)
	j.Incarnation = 0
	switch {
	case !j.Exists && domain.ErrorCode(err) != domain.ENOTFOUND:
		tb.Errorf("%s: job %s is deleted in the log, read model has %+v (%v)", when, name, jrow, err)
	case j.Exists && (err != nil || !reflect.DeepEqual(jrow, *j)):
		tb.Errorf("%s: job %s\nread model  %+v (%v)\ndomain fold %+v", when, name, jrow, err, *j)
	}
}

// randomFunctionEvents is a random history of one function: any event may
// name any version so far, as late and duplicated worker results do.
func randomFunctionEvents(rng *rand.Rand, p *projected, name string) []domain.Event {
	var evs []domain.Event
	exists, versions, active := false, 0, 0
	cfg := func() domain.FunctionConfig {
		c, err := domain.FunctionSpec{Runtime: "python3.11", MemoryMB: 128 * (1 + rng.IntN(4)),
			EnvVars: map[string]string{"N": fmt.Sprint(rng.IntN(9))}, RetrySafe: rng.IntN(2) == 0}.Config()
		if err != nil {
			panic(err)
		}
		return c
	}
	anyVersion := func() int { return 1 + rng.IntN(max(versions, 1)) }
	for range 10 + rng.IntN(30) {
		at := p.tick()
		if !exists {
			evs = append(evs, domain.FunctionCreated{Namespace: p.ns, Name: name, Config: cfg(), At: at})
			exists, versions, active = true, 0, 0
			continue
		}
		switch rng.IntN(11) {
		case 0:
			evs = append(evs, domain.FunctionConfigUpdated{Config: cfg(), At: at})
		case 1, 2:
			versions++
			d := fmt.Sprintf("sha256:%d", rng.IntN(5))
			evs = append(evs, domain.VersionCreated{Version: versions, Digest: d, ZipKey: "zip/" + d, ContextKey: "ctx/" + d, Config: cfg(), At: at})
		case 3:
			evs = append(evs, domain.BuildStarted{Version: anyVersion(), At: at})
		case 4:
			v := anyVersion()
			evs = append(evs, domain.BuildSucceeded{Version: v, Image: fmt.Sprintf("img:%d", v), Log: "ok", At: at})
		case 5:
			evs = append(evs, domain.BuildFailed{Version: anyVersion(), Message: fmt.Sprintf("error %d", rng.IntN(99)), Log: "trace", At: at})
		case 6:
			v := anyVersion()
			reason := []string{domain.ActivationBuild, domain.ActivationRollback, domain.ActivationUpload}[rng.IntN(3)]
			evs = append(evs, domain.VersionActivated{Version: v, From: active, Reason: reason, At: at})
			active = v
		case 7, 8:
			evs = append(evs, domain.RolloutCompleted{Version: anyVersion(), Endpoint: fmt.Sprintf("http://127.0.0.1:%d", 4000+rng.IntN(9)), At: at})
		case 9:
			evs = append(evs, domain.RolloutFailed{Version: anyVersion(), Message: "crash loop", At: at})
		case 10:
			if rng.IntN(3) == 0 {
				evs = append(evs, domain.FunctionDeleted{At: at})
				exists = false
			}
		}
	}
	return evs
}

// randomTriggerEvents is a random history of one trigger, deletes included.
func randomTriggerEvents(rng *rand.Rand, p *projected, name string) []domain.Event {
	var evs []domain.Event
	exists := false
	for range 5 + rng.IntN(15) {
		at := p.tick()
		if !exists {
			typ, sched := domain.TriggerHTTP, ""
			if rng.IntN(2) == 0 {
				typ, sched = domain.TriggerCron, "*/5 * * * *"
			}
			evs = append(evs, domain.TriggerCreated{Namespace: p.ns, Name: name, Type: typ, Function: name, Schedule: sched, Enabled: rng.IntN(2) == 0, At: at})
			exists = true
			continue
		}
		switch rng.IntN(7) {
		case 0:
			evs = append(evs, domain.TriggerEnabled{At: at})
		case 1:
			evs = append(evs, domain.TriggerDisabled{At: at})
		case 2, 3, 4:
			evs = append(evs, domain.TriggerActiveChanged{Active: rng.IntN(2) == 0, At: at})
		case 5, 6:
			if rng.IntN(3) == 0 {
				evs = append(evs, domain.TriggerDeleted{At: at})
				exists = false
			}
		}
	}
	return evs
}

// randomJobEvents is a random history of one job: results of old runs arrive
// after a rerun, runs start twice.
func randomJobEvents(rng *rand.Rand, p *projected, name string) []domain.Event {
	var evs []domain.Event
	exists, runs := false, int64(0)
	anyRun := func() int64 { return 1 + rng.Int64N(max(runs, 1)) }
	for range 5 + rng.IntN(20) {
		at := p.tick()
		if !exists {
			evs = append(evs, domain.JobCreated{Namespace: p.ns, Name: name, Function: name,
				Event: json.RawMessage(fmt.Sprintf(`{"n": %d}`, rng.IntN(9))), At: at})
			exists, runs = true, 0
			continue
		}
		switch rng.IntN(9) {
		case 0, 1:
			runs++
			evs = append(evs, domain.JobRunRequested{RunID: runs, At: at})
		case 2, 3:
			evs = append(evs, domain.JobStarted{RunID: anyRun(), Version: 1 + rng.IntN(3), At: at})
		case 4, 5:
			evs = append(evs, domain.JobSucceeded{RunID: anyRun(), Result: `{"ok": true}`, Output: "out", At: at})
		case 6, 7:
			evs = append(evs, domain.JobFailed{RunID: anyRun(), Message: "ValueError", Output: "trace", At: at})
		case 8:
			if rng.IntN(3) == 0 {
				evs = append(evs, domain.JobDeleted{At: at})
				exists = false
			}
		}
	}
	return evs
}
