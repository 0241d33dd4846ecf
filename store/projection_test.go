package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// projected is a Store that keeps the real read models, with helpers that run
// domain commands the way the API and the workers do.
type projected struct {
	*store.Store
	pool *pgxpool.Pool
	ns   string
	now  time.Time
}

func setupProjected(tb testing.TB, pool *pgxpool.Pool) *projected {
	tb.Helper()
	return &projected{Store: store.New(pool, mustRiver(tb, pool)), pool: pool, ns: testutil.UniqueNS(tb),
		now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
}

// tick returns a new, later "now" for each command so timestamps differ.
func (p *projected) tick() time.Time { p.now = p.now.Add(time.Second); return p.now }

func (p *projected) fn(tb testing.TB, name string, cmd func(f *domain.Function) ([]domain.Event, error)) {
	tb.Helper()
	p.exec(tb, domain.FunctionStream(p.ns, name), domain.NewFunction(p.ns, name), func(a store.Aggregate) ([]domain.Event, error) {
		return cmd(a.(*domain.Function))
	})
}

func (p *projected) trigger(tb testing.TB, name string, cmd func(t *domain.Trigger) ([]domain.Event, error)) {
	tb.Helper()
	p.exec(tb, domain.TriggerStream(p.ns, name), domain.NewTrigger(p.ns, name), func(a store.Aggregate) ([]domain.Event, error) {
		return cmd(a.(*domain.Trigger))
	})
}

func (p *projected) job(tb testing.TB, name string, cmd func(j *domain.Job) ([]domain.Event, error)) {
	tb.Helper()
	p.exec(tb, domain.JobStream(p.ns, name), domain.NewJob(p.ns, name), func(a store.Aggregate) ([]domain.Event, error) {
		return cmd(a.(*domain.Job))
	})
}

func (p *projected) exec(tb testing.TB, stream string, agg store.Aggregate, decide func(store.Aggregate) ([]domain.Event, error)) {
	tb.Helper()
	_, err := p.Execute(context.Background(), store.Metadata{Actor: "alice", RequestID: "req-1"}, func(tx *store.Tx) error {
		fresh := reflect.New(reflect.TypeOf(agg).Elem())
		fresh.Elem().Set(reflect.ValueOf(agg).Elem())
		a := fresh.Interface().(store.Aggregate)
		if err := tx.Load(context.Background(), stream, a); err != nil {
			return err
		}
		evs, err := decide(a)
		if err != nil {
			return err
		}
		return tx.Append(context.Background(), stream, a, evs)
	})
	if err != nil {
		tb.Fatalf("command on %s: %v", stream, err)
	}
}

// dump returns every row of every read model as sorted JSON text.
func dump(tb testing.TB, pool *pgxpool.Pool) map[string][]string {
	tb.Helper()
	out := map[string][]string{}
	for _, table := range []string{"namespaces", "functions", "function_versions", "activations", "triggers", "jobs"} {
		rows, err := pool.Query(context.Background(), fmt.Sprintf(`SELECT to_jsonb(t)::text FROM %s t ORDER BY 1`, table))
		if err != nil {
			tb.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				tb.Fatal(err)
			}
			out[table] = append(out[table], s)
		}
		if rows.Err() != nil {
			tb.Fatal(rows.Err())
		}
	}
	return out
}

// richHistory runs functions, uploads, builds, rollbacks, triggers toggled,
// jobs run and deletions through the domain, as the API and workers would.
func richHistory(t *testing.T, p *projected) {
	ctx := context.Background()
	_ = ctx
	now := p.tick
	p.exec(t, domain.NamespaceStream(p.ns), &domain.Namespace{Name: p.ns}, func(a store.Aggregate) ([]domain.Event, error) {
		return a.(*domain.Namespace).Ensure(now())
	})
	for _, name := range []string{"api", "cron-fn", "gone"} {
		p.fn(t, name, func(f *domain.Function) ([]domain.Event, error) {
			return f.Create(domain.FunctionSpec{Runtime: "python3.11", EnvVars: map[string]string{"MODE": name},
				RetrySafe: name == "cron-fn"}, now())
		})
	}
	upload := func(name, digest string) {
		p.fn(t, name, func(f *domain.Function) ([]domain.Event, error) {
			evs, _, err := f.Upload(domain.Code{Digest: digest, ZipKey: "zip/" + digest, ContextKey: "ctx/" + digest}, now())
			return evs, err
		})
	}
	build := func(name string, n int, ok bool) {
		p.fn(t, name, func(f *domain.Function) ([]domain.Event, error) { return f.StartBuild(n, now()) })
		p.fn(t, name, func(f *domain.Function) ([]domain.Event, error) {
			if ok {
				return f.SucceedBuild(n, fmt.Sprintf("local/%s:v%d", name, n), "built", now())
			}
			return f.FailBuild(n, "SyntaxError: invalid syntax", "Traceback...", now())
		})
	}
	upload("api", "sha256:1")
	build("api", 1, true)
	p.fn(t, "api", func(f *domain.Function) ([]domain.Event, error) {
		return f.CompleteRollout(1, "http://127.0.0.1:4001", now())
	})
	upload("api", "sha256:2")
	build("api", 2, true)
	upload("api", "sha256:3")
	build("api", 3, false)
	p.fn(t, "api", func(f *domain.Function) ([]domain.Event, error) {
		return f.UpdateConfig(domain.FunctionSpec{Runtime: "python3.11", MemoryMB: 256, EnvVars: map[string]string{"MODE": "api"}}, now())
	})
	build("api", 4, true)
	p.fn(t, "api", func(f *domain.Function) ([]domain.Event, error) { return f.Rollback(1, now()) })
	p.fn(t, "api", func(f *domain.Function) ([]domain.Event, error) { return f.FailRollout(1, "crash loop: exit 1", now()) })
	upload("cron-fn", "sha256:c")
	build("cron-fn", 1, true)
	upload("cron-fn", "sha256:c2")
	build("cron-fn", 2, true)
	upload("cron-fn", "sha256:c") // v1's code again: v1 is active again, by an upload
	upload("cron-fn", "sha256:c3")
	build("cron-fn", 3, false) // v1 serves on: Ready, with v3's failure beside it
	upload("gone", "sha256:g")

	p.trigger(t, "web", func(tr *domain.Trigger) ([]domain.Event, error) {
		return tr.Create(domain.TriggerSpec{Type: "http", Function: "api", Enabled: true}, now())
	})
	p.trigger(t, "web", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetActive(true, now()), nil })
	p.trigger(t, "web", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetEnabled(false, now()) })
	p.trigger(t, "web", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetActive(false, now()), nil })
	p.trigger(t, "web", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetEnabled(true, now()) })
	p.trigger(t, "tick", func(tr *domain.Trigger) ([]domain.Event, error) {
		return tr.Create(domain.TriggerSpec{Type: "cron", Function: "cron-fn", Schedule: "*/5 * * * *", Enabled: true}, now())
	})
	p.trigger(t, "gone-web", func(tr *domain.Trigger) ([]domain.Event, error) {
		return tr.Create(domain.TriggerSpec{Type: "http", Function: "gone"}, now())
	})

	p.job(t, "once", func(j *domain.Job) ([]domain.Event, error) {
		return j.Create(domain.JobSpec{Function: "cron-fn", Event: json.RawMessage(`{"n": 1}`), RunID: 1}, now())
	})
	p.job(t, "once", func(j *domain.Job) ([]domain.Event, error) { return j.Start(1, 1, now()), nil })
	p.job(t, "once", func(j *domain.Job) ([]domain.Event, error) {
		return j.Succeed(1, `{"ok": true}`, "hi\n{\"ok\": true}", now()), nil
	})
	p.job(t, "once", func(j *domain.Job) ([]domain.Event, error) { return j.SetRunID(2, now()) })
	p.job(t, "once", func(j *domain.Job) ([]domain.Event, error) { return j.Start(2, 1, now()), nil })
	p.job(t, "once", func(j *domain.Job) ([]domain.Event, error) {
		return j.Fail(2, "ValueError: boom", "Traceback...", now()), nil
	})
	p.job(t, "later", func(j *domain.Job) ([]domain.Event, error) { return j.Create(domain.JobSpec{Function: "api"}, now()) })
	p.job(t, "dropped", func(j *domain.Job) ([]domain.Event, error) { return j.Create(domain.JobSpec{Function: "api"}, now()) })
	p.job(t, "dropped", func(j *domain.Job) ([]domain.Event, error) { return j.Delete(now()) })

	p.trigger(t, "gone-web", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.Delete(now()) })
	p.fn(t, "gone", func(f *domain.Function) ([]domain.Event, error) { return f.Delete(now()) })
	p.fn(t, "gone", func(f *domain.Function) ([]domain.Event, error) {
		return f.Create(domain.FunctionSpec{Runtime: "nodejs20"}, now())
	})
}

func TestProjectionsRebuildYieldsIdenticalRows(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t) // own database: the rebuild truncates every read model
	p := setupProjected(t, pool)
	richHistory(t, p)

	before := dump(t, pool)
	for _, table := range []string{"namespaces", "functions", "function_versions", "activations", "triggers", "jobs"} {
		if len(before[table]) == 0 {
			t.Fatalf("history left %s empty: the test would prove nothing", table)
		}
	}
	n, err := p.RebuildProjections(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n < 40 {
		t.Fatalf("replayed %d events, want the whole history", n)
	}
	after := dump(t, pool)
	if !reflect.DeepEqual(before, after) {
		for table := range before {
			if !reflect.DeepEqual(before[table], after[table]) {
				t.Errorf("%s differs after rebuild:\nbefore %v\nafter  %v", table, before[table], after[table])
			}
		}
	}
}

// TestProjectionsMatchDomainFold checks that the read model says what folding
// the stream in the domain says, so the two never drift apart.
func TestProjectionsMatchDomainFold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupProjected(t, pgtest.Pool(t))
	richHistory(t, p)

	for _, name := range []string{"api", "cron-fn", "gone"} {
		var agg *domain.Function
		if _, err := p.Execute(ctx, store.Metadata{}, func(tx *store.Tx) error {
			agg = domain.NewFunction(p.ns, name)
			return tx.Load(ctx, domain.FunctionStream(p.ns, name), agg)
		}); err != nil {
			t.Fatal(err)
		}
		row, err := p.GetFunction(ctx, p.ns, name)
		if err != nil {
			t.Fatal(err)
		}
		agg.Versions = nil
		agg.Incarnation = 0 // the aggregate's own: it names queued work, the read model has no use for it
		if !reflect.DeepEqual(row, *agg) {
			t.Errorf("%s: read model\n%+v\ndomain fold\n%+v", name, row, *agg)
		}
		vs, err := p.ListVersions(ctx, p.ns, name)
		if err != nil {
			t.Fatal(err)
		}
		full := domain.NewFunction(p.ns, name)
		evs, _ := p.ReadStream(ctx, domain.FunctionStream(p.ns, name), 1)
		if err := store.Fold(evs, full); err != nil {
			t.Fatal(err)
		}
		if len(vs) != len(full.Versions) {
			t.Fatalf("%s: %d versions in read model, %d in domain", name, len(vs), len(full.Versions))
		}
		for i, v := range vs {
			if want := full.Versions[len(full.Versions)-1-i]; !reflect.DeepEqual(v, want) {
				t.Errorf("%s v%d: read model %+v, domain %+v", name, v.Number, v, want)
			}
		}
	}
	api, _ := p.GetFunction(ctx, p.ns, "api")
	// Rolled back to version 1: its configuration (128 MiB), not version 4's 256.
	if api.ActiveVersion != 1 || api.Phase != domain.PhaseFailed || api.Config.MemoryMB != 128 {
		t.Fatalf("api = %+v", api)
	}
	acts, _ := p.ListActivations(ctx, p.ns, "api")
	if len(acts) != 4 || acts[0].Reason != "rollback" || acts[0].Actor != "alice" || acts[0].FromVersion != 4 {
		t.Fatalf("activations = %+v", acts)
	}
	job, _ := p.GetJob(ctx, p.ns, "once")
	if job.Phase != domain.JobPhaseFailed || job.RunID != 2 || job.Message != "ValueError: boom" {
		t.Fatalf("job = %+v", job)
	}
	if _, err := p.GetJob(ctx, p.ns, "dropped"); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("deleted job: %v", err)
	}
	tr, _ := p.GetTrigger(ctx, p.ns, "web")
	if !tr.Enabled || tr.Active {
		t.Fatalf("trigger = %+v", tr)
	}
	gone, _ := p.GetFunction(ctx, p.ns, "gone")
	if gone.Config.Runtime != domain.RuntimeNodeJS20 || gone.Phase != domain.PhasePending {
		t.Fatalf("recreated function = %+v", gone)
	}
	if cronFn, _ := p.GetFunction(ctx, p.ns, "cron-fn"); !cronFn.Config.RetrySafe || api.Config.RetrySafe {
		t.Fatalf("retry_safe: cron-fn %v, api %v; want true, false", cronFn.Config.RetrySafe, api.Config.RetrySafe)
	}
	if vs, _ := p.ListVersions(ctx, p.ns, "gone"); len(vs) != 0 {
		t.Fatalf("recreated function kept old versions: %+v", vs)
	}
}

// TestExecuteRetriesLostRaces: ten concurrent creates of one trigger name give
// one success and nine real conflicts ("already exists"), never a raw race.
func TestExecuteRetriesLostRaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupProjected(t, pgtest.Pool(t))
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.Execute(ctx, store.Metadata{}, func(tx *store.Tx) error {
				tr := domain.NewTrigger(p.ns, "race")
				if err := tx.Load(ctx, domain.TriggerStream(p.ns, "race"), tr); err != nil {
					return err
				}
				evs, err := tr.Create(domain.TriggerSpec{Type: "http", Function: "f"}, time.Now())
				if err != nil {
					return err
				}
				return tx.Append(ctx, domain.TriggerStream(p.ns, "race"), tr, evs)
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		if err == nil {
			ok++
			continue
		}
		testutil.RequireCode(t, err, domain.ECONFLICT)
		if msg := domain.ErrorMessage(err); msg != `trigger "race" already exists` {
			t.Errorf("conflict message %q: want the domain's, not a raw race", msg)
		}
	}
	if ok != 1 {
		t.Fatalf("%d creates succeeded, want 1", ok)
	}
}

// TestListFiringCronTriggers: one query gives the cron triggers that fire
// (enabled, active, of a function with an active version) with when they
// last became active; the rest are left out.
func TestListFiringCronTriggers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupProjected(t, pgtest.Pool(t))
	now := p.tick
	for _, name := range []string{"built", "unbuilt"} {
		p.fn(t, name, func(f *domain.Function) ([]domain.Event, error) {
			return f.Create(domain.FunctionSpec{Runtime: "python3.11"}, now())
		})
	}
	p.fn(t, "built", func(f *domain.Function) ([]domain.Event, error) {
		evs, _, err := f.Upload(domain.Code{Digest: "sha256:b", ZipKey: "zip/b", ContextKey: "ctx/b"}, now())
		return evs, err
	})
	p.fn(t, "built", func(f *domain.Function) ([]domain.Event, error) { return f.StartBuild(1, now()) })
	p.fn(t, "built", func(f *domain.Function) ([]domain.Event, error) { return f.SucceedBuild(1, "img", "", now()) })
	cron := func(name, fn string, enabled bool) {
		p.trigger(t, name, func(tr *domain.Trigger) ([]domain.Event, error) {
			return tr.Create(domain.TriggerSpec{Type: "cron", Function: fn, Schedule: "* * * * *", Enabled: enabled}, now())
		})
	}
	active := func(name string, on bool) time.Time {
		at := now()
		p.trigger(t, name, func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetActive(on, at), nil })
		return at
	}
	cron("fires", "built", true)
	active("fires", true)
	active("fires", false)
	since := active("fires", true) // the latest activation counts
	cron("disabled", "built", false)
	cron("inactive", "built", true)
	cron("no-version", "unbuilt", true)
	active("no-version", true)
	p.trigger(t, "web", func(tr *domain.Trigger) ([]domain.Event, error) {
		return tr.Create(domain.TriggerSpec{Type: "http", Function: "built", Enabled: true}, now())
	})
	active("web", true)

	got, err := p.ListFiringCronTriggers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ours []store.CronTrigger
	for _, c := range got {
		if c.Namespace == p.ns {
			ours = append(ours, c)
		}
	}
	if len(ours) != 1 || ours[0].Name != "fires" || !ours[0].ActiveSince.Equal(since) || ours[0].Schedule != "* * * * *" {
		t.Fatalf("firing cron triggers = %+v, want only fires, active since %v", ours, since)
	}
}

// TestExecuteRunsADeadlockedCommandAgain: two commands lock two rows in
// opposite orders; PostgreSQL aborts one of them as a deadlock, and Execute
// runs it again instead of failing it (a trigger's PATCH once answered 500
// with SQLSTATE 40P01).
func TestExecuteRunsADeadlockedCommandAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE locks (id int PRIMARY KEY); INSERT INTO locks VALUES (1), (2)`); err != nil {
		t.Fatal(err)
	}
	s := store.New(pool, nil)
	var both sync.WaitGroup
	both.Add(2)
	var attempts atomic.Int32
	lockBoth := func(first, second int) error {
		firstTry := true
		_, err := s.Execute(ctx, store.Metadata{}, func(tx *store.Tx) error {
			attempts.Add(1)
			if _, err := tx.Exec(ctx, `SELECT id FROM locks WHERE id = $1 FOR UPDATE`, first); err != nil {
				return err
			}
			if firstTry { // both hold their first row before either asks for its second
				firstTry = false
				both.Done()
				both.Wait()
			}
			_, err := tx.Exec(ctx, `SELECT id FROM locks WHERE id = $1 FOR UPDATE`, second)
			return err
		})
		return err
	}
	errs := make(chan error, 2)
	go func() { errs <- lockBoth(1, 2) }()
	go func() { errs <- lockBoth(2, 1) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("Execute = %v, want the deadlocked command run again", err)
		}
	}
	if n := attempts.Load(); n < 3 {
		t.Fatalf("%d attempts: no deadlock happened, the test proves nothing", n)
	}
}
