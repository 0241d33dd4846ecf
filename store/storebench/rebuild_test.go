package storebench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
)

// BenchmarkProjectionRebuild measures store.(*Store).RebuildProjections
// over about 200,000 events (see platformHistory: 20 namespaces, about
// 1,850 functions with their uploads, builds, versions, rollouts and
// configuration changes, http and cron triggers switched off and on, jobs),
// in events per second (target ≥ 50,000), next to a raw scan of the same
// events in the same run: SELECT * FROM events ORDER BY position, every
// row read off the wire undecoded. Two interleaved rounds; it reports the
// medians and, from /proc, the CPU time this process and the database's
// backends spent per event during the rebuilds (wall time well above their
// sum is time spent waiting on round trips). With -short: about 2,000 events.
//
//	go test ./store/storebench -run '^$' -bench ProjectionRebuild -benchtime 1x -v
func BenchmarkProjectionRebuild(b *testing.B) {
	if !measuredRun(b) {
		return
	}
	ctx := context.Background()
	pool := newPool(b, 4)
	h := platformHistory(b, pick(1850, 20))
	t0 := time.Now()
	h.append(store.New(pool, nil))
	b.Logf("appended %d events of %d streams in %s; load average %s", h.events, len(h.streams), time.Since(t0).Round(time.Second), testutil.LoadAverage())

	s := store.New(pool, nil)
	var rebuildRates, scanRates []float64
	var goTicks, pgTicks int64
	for round := range 2 {
		t := time.Now()
		n, size := scanEvents(b, pool)
		scan := time.Since(t)
		if n != h.events {
			b.Fatalf("the scan read %d events, want %d", n, h.events)
		}
		scanRates = append(scanRates, float64(n)/scan.Seconds())

		pids := backendPIDs(b, pool)
		self := []int{os.Getpid()}
		g0, p0 := testutil.CPUTicks(self), testutil.CPUTicks(pids)
		t = time.Now()
		n, err := s.RebuildProjections(ctx)
		if err != nil {
			b.Fatal(err)
		}
		rebuild := time.Since(t)
		goTicks += testutil.CPUTicks(self) - g0
		pgTicks += testutil.CPUTicks(pids) - p0
		if n != h.events {
			b.Fatalf("the rebuild replayed %d events, want %d", n, h.events)
		}
		rebuildRates = append(rebuildRates, float64(n)/rebuild.Seconds())
		b.Logf("round %d: raw scan %.0f events/s (%d MiB in %s), rebuild %.0f events/s (%s)", round+1,
			scanRates[round], size>>20, scan.Round(time.Millisecond), rebuildRates[round], rebuild.Round(time.Millisecond))
	}
	checkProjections(b, s, h)
	rebuild, scan := median(rebuildRates), median(scanRates)
	b.ReportMetric(0, "ns/op")
	report(b, rebuild, "rebuild-events/s", "rebuild: %.0f events/s (target ≥ 50,000): %s", rebuild, verdict(rebuild >= 50_000))
	report(b, scan, "scan-events/s", "raw scan of the events table: %.0f events/s", scan)
	report(b, rebuild/scan, "rebuild/scan", "rebuild / raw scan: %.3f", rebuild/scan)
	goCPU, pgCPU := testutil.CPUPerOp(goTicks, 2*h.events), testutil.CPUPerOp(pgTicks, 2*h.events)
	report(b, float64(goCPU.Nanoseconds())/1000, "rebuild-go-cpu-µs/event", "rebuild CPU per event: this process %s, PostgreSQL backends %s, wall %s; load average %s",
		goCPU, pgCPU, time.Duration(float64(time.Second)/rebuild), testutil.LoadAverage())
	b.ReportMetric(float64(pgCPU.Nanoseconds())/1000, "rebuild-pg-cpu-µs/event")
}

// platformHistory is the history of functions functions spread over 20
// namespaces (fewer in a small one), about 100 events each: 1 to 30
// deploys and 0 to 10 configuration changes, an http trigger on most, a cron
// trigger on one in three, switched off and on now and then, and a job on
// one in ten that ran a few times.
func platformHistory(b *testing.B, functions int) *history {
	h := newHistory(b, 36, time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	namespaces := min(20, max(1, functions/10))
	for i := range namespaces {
		h.namespace(fmt.Sprintf("sless-%016x", 0x5eed0000+i))
	}
	for i := range functions {
		ns := fmt.Sprintf("sless-%016x", 0x5eed0000+i%namespaces)
		name := fmt.Sprintf("%s-%d", functionWords[i%len(functionWords)], i)
		h.function(ns, name, 1+h.rng.IntN(30), h.rng.IntN(11))
		if h.rng.IntN(10) < 8 {
			h.trigger(ns, name+"-http", name, domain.TriggerHTTP, "", h.rng.IntN(3))
		}
		if h.rng.IntN(3) == 0 {
			h.trigger(ns, name+"-cron", name, domain.TriggerCron, fmt.Sprintf("%d * * * *", h.rng.IntN(60)), h.rng.IntN(2))
		}
		if h.rng.IntN(10) == 0 {
			h.job(ns, name+"-export", name, 1+h.rng.IntN(5))
		}
	}
	return h
}

// scanEvents reads every row of the events table in position order, off
// the wire without decoding, and returns how many rows and bytes it read.
func scanEvents(b *testing.B, pool *pgxpool.Pool) (n int, size int) {
	b.Helper()
	rows, err := pool.Query(context.Background(), `SELECT * FROM events ORDER BY position`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		for _, v := range rows.RawValues() {
			size += len(v)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return n, size
}

// backendPIDs are the PostgreSQL backends serving pool's database.
func backendPIDs(b *testing.B, pool *pgxpool.Pool) []int {
	b.Helper()
	rows, err := pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		b.Fatal(err)
	}
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// checkProjections fails unless the read models hold every function of the
// history.
func checkProjections(b *testing.B, s *store.Store, h *history) {
	b.Helper()
	fns, err := s.ListAllFunctions(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	want := 0
	for _, st := range h.streams {
		if strings.HasPrefix(st.id, "function:") {
			want++
		}
	}
	if len(fns) != want {
		b.Fatalf("the read model has %d functions, the history %d", len(fns), want)
	}
}
