package storebench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/workers"
)

// BenchmarkCronTick measures one tick of the cron enqueuer with 10,000 cron
// triggers (2,000 functions with an active version, 5 triggers each, in 10
// namespaces; schedules: 2 % every minute, 8 % every 5 minutes, 20 % every
// 15, 40 % hourly and 30 % daily, at random minutes), with River holding
// what a day of firing them leaves: the cron_run jobs of every slot of the
// last 24 hours, completed (River keeps them that long; about 800,000
// rows, which the tick read the last slot fired from until it recorded them
// in cron_fired).
//
// A tick is what workers' cron_tick job does (workers/cron.go,
// cronTickWorker.Work, unexported: see cronTick): the firing triggers
// with the last slot fired of each (store.ListFiringCronTriggers), each
// trigger's due slot, and one transaction inserting a workers.CronRunArgs
// job per due slot (store.InsertJobsTx) and recording the slots
// (store.RecordFiredSlotsTx).
// Ticks run every 5 s of a simulated clock across a top of the hour (where
// 2,000 and more slots fall due at once), each timed on the wall clock; it
// reports p50 and p99 (target ≤ 100 ms), the time of each step in the
// slowest tick and in the one with the most slots due, and the plan of the
// read (auto_explain, see planCapture). With -short: 100 triggers and
// 6 ticks.
//
//	go test ./store/storebench -run '^$' -bench CronTick -benchtime 1x -v
func BenchmarkCronTick(b *testing.B) {
	if !measuredRun(b) {
		return
	}
	ctx := context.Background()
	pool := newPool(b, 4)
	triggers, ticks := pick(10_000, 100), pick(24, 6)
	// Every 5 s, the top of the hour halfway.
	start := time.Now().UTC().Truncate(time.Hour).Add(time.Hour - time.Duration(ticks/2)*5*time.Second)

	t0 := time.Now()
	h := newHistory(b, 37, start.AddDate(-1, 0, 0))
	h.buildsFail = false // every function runs
	rng := rand.New(rand.NewPCG(37, 6))
	var schedules []cronTriggerSchedule
	functions := triggers / 5
	namespaces := min(10, functions)
	for i := range namespaces {
		h.namespace(fmt.Sprintf("sless-%016x", 0xc0de0000+i))
	}
	for i := range functions {
		ns := fmt.Sprintf("sless-%016x", 0xc0de0000+i%namespaces)
		fn := fmt.Sprintf("%s-%d", functionWords[i%len(functionWords)], i)
		h.function(ns, fn, 1, 0)
		for k := range 5 {
			name := fmt.Sprintf("%s-cron-%d", fn, k)
			sched := cronSchedule(rng)
			h.trigger(ns, name, fn, domain.TriggerCron, sched, 0)
			schedules = append(schedules, cronTriggerSchedule{ns: ns, name: name, schedule: sched})
		}
	}
	h.append(store.New(pool, nil))
	s := store.New(pool, nil)
	if _, err := s.RebuildProjections(ctx); err != nil {
		b.Fatal(err)
	}
	fired := loadFiredSlots(b, pool, schedules, start)
	// What the ticks that enqueued them recorded: each trigger's last slot.
	if _, err := pool.Exec(ctx, `INSERT INTO cron_fired (namespace, trigger, slot)
		SELECT args->>'namespace', args->>'trigger', max((args->>'slot')::timestamptz) FROM river_job
		WHERE kind = $1 GROUP BY 1, 2`, workers.CronRunArgs{}.Kind()); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) river_job, triggers, functions, cron_fired`); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d cron triggers of %d functions (%d events) and %d completed cron_run jobs of the last 24 h made in %s; load average %s",
		len(schedules), functions, h.events, fired, time.Since(t0).Round(time.Second), testutil.LoadAverage())

	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		b.Fatal(err)
	}
	s = store.New(pool, client)
	if firing, err := s.ListFiringCronTriggers(ctx); err != nil || len(firing) != len(schedules) {
		b.Fatalf("%d cron triggers fire, want %d (%v)", len(firing), len(schedules), err)
	}
	var took []time.Duration
	var slowest, busiest tickSteps
	enqueued := 0
	for k := range ticks {
		now := start.Add(time.Duration(k) * 5 * time.Second)
		steps, n, err := cronTick(ctx, s, now, workers.DefaultCronCatchUp)
		if err != nil {
			b.Fatal(err)
		}
		enqueued += n
		took = append(took, steps.total())
		if steps.total() > slowest.total() {
			slowest = steps
		}
		if steps.due > busiest.due {
			busiest = steps
		}
	}
	// The top of the hour's tick fired the hourly triggers of minute 0 and
	// every */5 and */15 one at least.
	if want := len(schedules) / 10; enqueued < want {
		b.Fatalf("the ticks enqueued %d slots, want at least %d", enqueued, want)
	}
	p50, p99 := percentile(took, 50), percentile(took, 99)
	b.ReportMetric(0, "ns/op")
	report(b, ms(p50), "tick-p50-ms", "cron tick: p50 %.1f ms over %d ticks, %d slots enqueued in all", ms(p50), ticks, enqueued)
	report(b, ms(p99), "tick-p99-ms", "cron tick: p99 %.1f ms (target ≤ 100 ms): %s", ms(p99), verdict(p99 <= 100*time.Millisecond))
	for _, t := range []struct {
		what string
		st   tickSteps
	}{{"slowest tick", slowest}, {"tick with the most slots due", busiest}} {
		b.Logf("%s (%d slots due): firing triggers %.1f ms, due slots %.1f ms, insert %.1f ms",
			t.what, t.st.due, ms(t.st.list), ms(t.st.decide), ms(t.st.insert))
	}
	pc := newPlanCapture(b, pool.Config().ConnString())
	b.Logf("the plan of ListFiringCronTriggers:\n%s", pc.plan("auto", func(s *store.Store) error {
		_, err := s.ListFiringCronTriggers(ctx)
		return err
	}))
	b.Logf("load average: %s", testutil.LoadAverage())
}

type cronTriggerSchedule struct{ ns, name, schedule string }

// cronSchedule draws a schedule of the mix BenchmarkCronTick describes.
func cronSchedule(rng *rand.Rand) string {
	switch r := rng.IntN(100); {
	case r < 2:
		return "* * * * *"
	case r < 10:
		return "*/5 * * * *"
	case r < 30:
		return "*/15 * * * *"
	case r < 70:
		return fmt.Sprintf("%d * * * *", rng.IntN(60))
	default:
		return fmt.Sprintf("%d %d * * *", rng.IntN(60), rng.IntN(24))
	}
}

// loadFiredSlots copies into river_job a completed cron_run job for every
// slot of every trigger in the 24 hours before now, as River keeps them.
// They carry no unique key (River's is a hash it computes at insert): the
// unique index is smaller than in production, the table as large.
func loadFiredSlots(b *testing.B, pool interface {
	CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error)
}, schedules []cronTriggerSchedule, now time.Time) int {
	b.Helper()
	rng := rand.New(rand.NewPCG(37, 7))
	k, slot := 0, time.Time{}
	var sched domain.Schedule
	src := pgx.CopyFromFunc(func() ([]any, error) {
		for {
			if k == len(schedules) {
				return nil, nil
			}
			if slot.IsZero() {
				var err error
				if sched, err = domain.ParseCron(schedules[k].schedule); err != nil {
					return nil, err
				}
				slot = now.Add(-24 * time.Hour)
			}
			if slot = sched.Next(slot); !slot.After(now) {
				break
			}
			k, slot = k+1, time.Time{}
		}
		args, err := json.Marshal(workers.CronRunArgs{Namespace: schedules[k].ns, Trigger: schedules[k].name, Slot: slot})
		if err != nil {
			return nil, err
		}
		created := slot.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		attempted := created.Add(time.Duration(5+rng.IntN(50)) * time.Millisecond)
		return []any{args, workers.CronRunArgs{}.Kind(), "completed", outbox.QueueRuns, 1, 3, 1, attempted,
			attempted.Add(time.Duration(50+rng.IntN(500)) * time.Millisecond), created, created, []string{"sless-1"}}, nil
	})
	n, err := pool.CopyFrom(context.Background(), pgx.Identifier{"river_job"}, []string{"args", "kind", "state", "queue",
		"priority", "max_attempts", "attempt", "attempted_at", "finalized_at", "created_at", "scheduled_at", "attempted_by"}, src)
	if err != nil {
		b.Fatal(err)
	}
	return int(n)
}

// tickSteps is the time of each step of one tick, and how many slots it enqueued.
type tickSteps struct {
	list, decide, insert time.Duration
	due                  int
}

func (t tickSteps) total() time.Duration { return t.list + t.decide + t.insert }

// cronTick is one tick of the cron enqueuer at now, step for step as
// workers' cronTickWorker.Work (workers/cron.go) does it but for completing
// its own River job in the insert's transaction: the firing triggers with
// the last slot of each, each one's latest due slot after the later of
// that, its activation and now - catchUp, then one transaction inserting a
// cron_run job (unique by trigger and slot) per due slot and recording the
// slots.
func cronTick(ctx context.Context, s *store.Store, now time.Time, catchUp time.Duration) (tickSteps, int, error) {
	var st tickSteps
	t := time.Now()
	triggers, err := s.ListFiringCronTriggers(ctx)
	if err != nil {
		return st, 0, err
	}
	st.list = time.Since(t)
	t = time.Now()
	var params []river.InsertManyParams
	var fired []store.FiredSlot
	for _, tr := range triggers {
		sched, err := domain.ParseCron(tr.Schedule)
		if err != nil {
			return st, 0, err
		}
		since := slices.MaxFunc([]time.Time{tr.ActiveSince, tr.LastFired, now.Add(-catchUp)},
			func(a, b time.Time) int { return a.Compare(b) })
		if slot := dueSlot(sched, since, now); !slot.IsZero() {
			params = append(params, river.InsertManyParams{Args: workers.CronRunArgs{Namespace: tr.Namespace, Trigger: tr.Name, Slot: slot}})
			fired = append(fired, store.FiredSlot{Namespace: tr.Namespace, Trigger: tr.Name, Slot: slot})
		}
	}
	st.decide, st.due = time.Since(t), len(params)
	t = time.Now()
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.InsertJobsTx(ctx, tx, params); err != nil {
			return err
		}
		return s.RecordFiredSlotsTx(ctx, tx, fired)
	})
	st.insert = time.Since(t)
	return st, len(params), err
}

// dueSlot is workers' dueSlot (unexported): the latest slot of s in (since, now].
func dueSlot(s domain.Schedule, since, now time.Time) time.Time {
	var slot time.Time
	for t := s.Next(since); !t.IsZero() && !t.After(now); t = s.Next(t) {
		slot = t
	}
	return slot
}
