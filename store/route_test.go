package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// TestRoutesFollowEventsAndAreAnnounced runs the commands that change a route
// and checks, for each, the route read back and the notification heard.
func TestRoutesFollowEventsAndAreAnnounced(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := setupProjected(t, pgtest.Pool(t))

	listening := make(chan struct{})
	heard := make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		done <- p.ListenRoutes(ctx, func() { close(listening) }, func(ns, fn string) {
			if ns == p.ns { // other tests share the database
				heard <- fn
			}
		})
	}()
	<-listening
	expect := func(what, fn string) {
		t.Helper()
		select {
		case got := <-heard:
			if got != fn {
				t.Fatalf("%s: heard %q, want %q", what, got, fn)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no notification", what)
		}
	}
	route := func() store.Route {
		t.Helper()
		r, err := p.GetRoute(ctx, p.ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	p.fn(t, "web", func(f *domain.Function) ([]domain.Event, error) {
		return f.Create(domain.FunctionSpec{Runtime: "python3.11", TimeoutSec: 7}, p.tick())
	})
	expect("create", "web")
	if r := route(); r.Phase != domain.PhasePending || r.TimeoutSec != 7 || r.HTTPTriggers != 0 || r.Endpoint != "" {
		t.Fatalf("created: %+v", r)
	}
	p.fn(t, "web", func(f *domain.Function) ([]domain.Event, error) {
		evs, _, err := f.Upload(domain.Code{Digest: "d1", ZipKey: "z", ContextKey: "c"}, p.tick())
		return evs, err
	})
	expect("upload", "web")
	p.fn(t, "web", func(f *domain.Function) ([]domain.Event, error) { return f.SucceedBuild(1, "img", "", p.tick()) })
	expect("build", "web")
	p.trigger(t, "web-http", func(tr *domain.Trigger) ([]domain.Event, error) {
		return tr.Create(domain.TriggerSpec{Type: "http", Function: "web", Enabled: true}, p.tick())
	})
	expect("trigger", "web")
	p.trigger(t, "web-cron", func(tr *domain.Trigger) ([]domain.Event, error) {
		return tr.Create(domain.TriggerSpec{Type: "cron", Function: "web", Schedule: "* * * * *", Enabled: true}, p.tick())
	})
	p.fn(t, "web", func(f *domain.Function) ([]domain.Event, error) {
		return f.CompleteRollout(1, "http://127.0.0.1:1234", p.tick())
	})
	expect("rollout (the cron trigger is not announced)", "web")
	if r := route(); r.Phase != domain.PhaseReady || r.Endpoint != "http://127.0.0.1:1234" || r.ActiveVersion != 1 ||
		r.HTTPTriggers != 1 || !r.HTTPEnabled {
		t.Fatalf("rolled out: %+v", r)
	}
	p.trigger(t, "web-http", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetEnabled(false, p.tick()) })
	expect("disable", "web")
	if r := route(); r.HTTPEnabled || r.HTTPTriggers != 1 {
		t.Fatalf("disabled: %+v", r)
	}
	p.trigger(t, "web-http", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.Delete(p.tick()) })
	expect("delete trigger", "web")
	if r := route(); r.HTTPTriggers != 0 {
		t.Fatalf("trigger deleted: %+v", r)
	}
	p.fn(t, "web", func(f *domain.Function) ([]domain.Event, error) { return f.Delete(p.tick()) })
	expect("delete", "web")
	_, err := p.GetRoute(ctx, p.ns, "web")
	testutil.RequireCode(t, err, domain.ENOTFOUND)

	routes, err := p.ListRoutes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.Namespace == p.ns {
			t.Fatalf("deleted function listed: %+v", r)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ListenRoutes after cancel: %v", err)
	}
}

func TestQueueDepths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := store.New(pool, mustRiver(t, pool))
	rc := mustRiver(t, pool)
	for i := range 3 {
		opts := &river.InsertOpts{Queue: "builds"}
		if i > 0 {
			opts.ScheduledAt = time.Now().Add(time.Duration(i) * time.Hour)
		}
		if _, err := rc.Insert(ctx, noteArgs{Token: "a"}, opts); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := s.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, d := range ds {
		got[d.Queue+"/"+d.State+"/"+d.Kind] = d.Jobs
	}
	if got["builds/available/store_test_note"] != 1 || got["builds/scheduled/store_test_note"] != 2 || len(got) != 2 {
		t.Fatalf("depths %v", got)
	}
}

// TestRoutesOfConcurrentCommandsAreAllAnnounced: commands committing at once
// are announced after their COMMITs, in groups; every function is heard,
// and a command that fails announces nothing.
func TestRoutesOfConcurrentCommandsAreAllAnnounced(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := setupProjected(t, pgtest.Pool(t))
	listening := make(chan struct{})
	var mu sync.Mutex
	heard := map[string]int{}
	go func() {
		_ = p.ListenRoutes(ctx, func() { close(listening) }, func(ns, fn string) {
			if ns == p.ns {
				mu.Lock()
				heard[fn]++
				mu.Unlock()
			}
		})
	}()
	<-listening

	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p.fn(t, fmt.Sprintf("f%d", i), func(f *domain.Function) ([]domain.Event, error) {
				return f.Create(domain.FunctionSpec{Runtime: "python3.11"}, p.tick())
			})
		})
	}
	wg.Wait()
	_, err := p.Execute(ctx, store.Metadata{Actor: "alice"}, func(tx *store.Tx) error {
		f := domain.NewFunction(p.ns, "failed")
		if err := tx.Load(ctx, domain.FunctionStream(p.ns, "failed"), f); err != nil {
			return err
		}
		evs, err := f.Create(domain.FunctionSpec{Runtime: "python3.11"}, p.tick())
		if err != nil {
			return err
		}
		if err := tx.Append(ctx, domain.FunctionStream(p.ns, "failed"), f, evs); err != nil {
			return err
		}
		return domain.Errorf(domain.EINVALID, "decided against it")
	})
	if domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("the failing command: %v", err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(heard) >= n
	})
	p.fn(t, "last", func(f *domain.Function) ([]domain.Event, error) {
		return f.Create(domain.FunctionSpec{Runtime: "python3.11"}, p.tick())
	})
	testutil.WaitFor(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return heard["last"] > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if heard["failed"] > 0 || len(heard) != n+1 {
		t.Fatalf("heard %v: want f0..f%d and last, never failed", heard, n-1)
	}
}
