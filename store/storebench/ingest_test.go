package storebench

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
)

// BenchmarkInvocationIngest measures the invocation log's writer
// (store.InvocationWriter with its defaults, as the proxy runs it) next to
// the raw COPY rate of the same table:
//
//   - offered 5k/s: records of the generated log's mix (invocationLog)
//     recorded at 5,000 per second for 5 s, as the proxy does at 5k req/s,
//     then flushed; it reports how many were dropped (target 0) and the
//     CPU this process spent per record;
//   - writer: the writer's maximum rate, with the producer kept below the
//     writer's buffer so that nothing is dropped, records stored per second
//     until the last is flushed;
//   - raw COPY: pgx CopyFrom of the same rows, in batches of the writer's
//     size (1,000), straight into the table on one connection; only the
//     CopyFrom calls are timed (the writer's time includes filling in and
//     encoding its records).
//
// The last two run 2 s each in three interleaved rounds, and the medians
// make the ratio writer / raw COPY (target ≥ 0.5). With -short every phase
// runs 0.2 s.
//
//	go test ./store/storebench -run '^$' -bench InvocationIngest -benchtime 1x -v
func BenchmarkInvocationIngest(b *testing.B) {
	if !measuredRun(b) {
		return
	}
	ctx := context.Background()
	pool := newPool(b, 4)
	s := store.New(pool, nil)
	l := newInvocationLog(35)
	rng := rand.New(rand.NewPCG(35, 1))
	templates := make([]store.Invocation, 4096)
	for i := range templates {
		templates[i] = l.row(rng, l.pick(rng), time.Now())
	}
	next := 0
	record := func() store.Invocation { // a new record as the proxy makes one: now, no id yet
		inv := templates[next%len(templates)]
		next++
		inv.ID, inv.StartedAt = [16]byte{}, time.Now()
		inv.EndedAt = inv.StartedAt.Add(inv.Duration)
		return inv
	}
	b.Logf("load average before: %s", testutil.LoadAverage())

	// Offered 5k/s.
	const rate = 5000
	offerFor := pick(5*time.Second, 200*time.Millisecond)
	w := s.NewInvocationWriter(store.InvocationWriterOptions{})
	if err := w.Flush(ctx); err != nil { // the writer has made today's partitions
		b.Fatal(err)
	}
	cpu0 := processCPU(b)
	start := time.Now()
	offered := 0
	for {
		elapsed := time.Since(start)
		if elapsed >= offerFor {
			break
		}
		for due := int(elapsed.Seconds() * rate); offered < due; offered++ {
			w.Record(record())
		}
		time.Sleep(time.Millisecond)
	}
	if err := w.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	cpu := processCPU(b) - cpu0
	st := w.Stats()
	if st.Failed != 0 || st.Written+st.Dropped != uint64(offered) {
		b.Fatalf("offered %d, stats %+v", offered, st)
	}
	b.ReportMetric(0, "ns/op")
	report(b, float64(st.Dropped), "dropped-at-5k/s", "offered 5k/s: %d of %d records dropped in %s (target 0): %s",
		st.Dropped, offered, offerFor, verdict(st.Dropped == 0))
	report(b, float64(cpu.Microseconds())/float64(offered), "cpu-µs/record-at-5k/s",
		"offered 5k/s: %.1f µs of this process's CPU per record (the producer's loop included)", float64(cpu.Microseconds())/float64(offered))

	// The maximum rates, interleaved.
	phase := pick(2*time.Second, 200*time.Millisecond)
	const batch = store.DefaultInvocationBatch
	room := uint64(store.DefaultInvocationBuffer - 2*batch) // records the producer lets wait
	var writerRates, rawRates []float64
	rows := make([][]any, batch)
	invs := make([]store.Invocation, batch)
	for round := range 3 {
		// writer
		before := w.Stats()
		sent := uint64(0)
		t0 := time.Now()
		for time.Since(t0) < phase {
			if sent-(w.Stats().Written-before.Written) >= room {
				time.Sleep(100 * time.Microsecond)
				continue
			}
			for range 100 {
				w.Record(record())
			}
			sent += 100
		}
		if err := w.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		after := w.Stats()
		if d := after.Dropped - before.Dropped; d != 0 || after.Written-before.Written != sent || after.Failed != 0 {
			b.Fatalf("round %d: the writer dropped %d, wrote %d of %d (failed %d)", round, d, after.Written-before.Written, sent, after.Failed)
		}
		writerRates = append(writerRates, float64(sent)/took.Seconds())

		// raw COPY: only the copies are timed
		copied := 0
		var copying time.Duration
		for t0 = time.Now(); time.Since(t0) < phase; {
			for i := range invs {
				invs[i] = record()
				invs[i].ID = store.NewInvocationID(invs[i].StartedAt)
				rows[i] = values(&invs[i])
			}
			t := time.Now()
			n, err := pool.CopyFrom(ctx, pgx.Identifier{"invocations"}, invocationColumns, pgx.CopyFromRows(rows))
			if err != nil {
				b.Fatal(err)
			}
			copying += time.Since(t)
			copied += int(n)
		}
		rawRates = append(rawRates, float64(copied)/copying.Seconds())
		b.Logf("round %d: writer %.0f records/s, raw COPY %.0f rows/s", round+1, writerRates[round], rawRates[round])
	}
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
	wr, raw := median(writerRates), median(rawRates)
	report(b, wr, "writer-records/s", "writer: %.0f records/s at most (median of 3 rounds of %s)", wr, phase)
	report(b, raw, "rawcopy-rows/s", "raw COPY: %.0f rows/s (median of 3 rounds of %s, batches of %d, one connection)", raw, phase, batch)
	report(b, wr/raw, "writer/rawcopy", "writer / raw COPY: %.2f (target ≥ 0.5): %s", wr/raw, verdict(wr/raw >= 0.5))
	b.Logf("load average after: %s", testutil.LoadAverage())
}
