package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// TestFiredSlotsComeBackWithTheirTriggers: the slots a tick records are each
// trigger's LastFired, a later slot recorded before is kept, and a deleted
// trigger's record goes with it (a new trigger of the same name starts
// with none).
func TestFiredSlotsComeBackWithTheirTriggers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupProjected(t, pgtest.Pool(t))
	p.fn(t, "fn", func(f *domain.Function) ([]domain.Event, error) {
		return f.Create(domain.FunctionSpec{Runtime: "python3.11"}, p.tick())
	})
	p.fn(t, "fn", func(f *domain.Function) ([]domain.Event, error) {
		evs, _, err := f.Upload(domain.Code{Digest: "sha256:b", ZipKey: "zip/b", ContextKey: "ctx/b"}, p.tick())
		return evs, err
	})
	p.fn(t, "fn", func(f *domain.Function) ([]domain.Event, error) { return f.StartBuild(1, p.tick()) })
	p.fn(t, "fn", func(f *domain.Function) ([]domain.Event, error) { return f.SucceedBuild(1, "img", "", p.tick()) })
	for _, name := range []string{"a", "b"} {
		p.trigger(t, name, func(tr *domain.Trigger) ([]domain.Event, error) {
			return tr.Create(domain.TriggerSpec{Type: "cron", Function: "fn", Schedule: "* * * * *", Enabled: true}, p.tick())
		})
		p.trigger(t, name, func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetActive(true, p.tick()), nil })
	}
	record := func(slots ...store.FiredSlot) {
		t.Helper()
		if err := p.InTx(ctx, func(tx pgx.Tx) error { return p.RecordFiredSlotsTx(ctx, tx, slots) }); err != nil {
			t.Fatal(err)
		}
	}
	lastFired := func() map[string]time.Time {
		t.Helper()
		ts, err := p.ListFiringCronTriggers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Time{}
		for _, tr := range ts {
			if tr.Namespace == p.ns {
				out[tr.Name] = tr.LastFired
			}
		}
		return out
	}
	if got := lastFired(); len(got) != 2 || !got["a"].IsZero() || !got["b"].IsZero() {
		t.Fatalf("before any tick: %v, want a and b with no slot", got)
	}
	noon := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	record(store.FiredSlot{Namespace: p.ns, Trigger: "a", Slot: noon}, store.FiredSlot{Namespace: p.ns, Trigger: "b", Slot: noon.Add(time.Minute)})
	record(store.FiredSlot{Namespace: p.ns, Trigger: "a", Slot: noon.Add(-time.Minute)}) // older: kept out
	if got := lastFired(); !got["a"].Equal(noon) || !got["b"].Equal(noon.Add(time.Minute)) {
		t.Fatalf("after the ticks: %v, want a at %s and b a minute later", got, noon)
	}

	p.trigger(t, "a", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.Delete(p.tick()) })
	p.trigger(t, "a", func(tr *domain.Trigger) ([]domain.Event, error) {
		return tr.Create(domain.TriggerSpec{Type: "cron", Function: "fn", Schedule: "* * * * *", Enabled: true}, p.tick())
	})
	p.trigger(t, "a", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetActive(true, p.tick()), nil })
	if got := lastFired(); !got["a"].IsZero() || !got["b"].Equal(noon.Add(time.Minute)) {
		t.Fatalf("after a was deleted and made again: %v, want a with no slot, b kept", got)
	}
}
