package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// BenchmarkAppend measures, interleaved in one loop so that all three see the
// same server conditions, one committed write each of:
//
//   - raw: a single-row INSERT into a plain table (autocommit), the baseline;
//   - append: Append of one event (BEGIN, version-checked INSERT, COMMIT);
//   - append+job: Append of one event plus one River job (the outbox).
//
// It reports each as writes per second and the two ratios to the baseline;
// ns/op (all three together) is suppressed.
//
//	go test ./store -run '^$' -bench Append -benchtime 2s
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewDB(b)
	s := setupOn(b, pool)
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_raw (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, stream_id text NOT NULL, data jsonb NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	data := map[string]any{"runtime": "python3.11", "memory_mib": 128, "entrypoint": "main.handle"}
	raw, err := json.Marshal(data)
	if err != nil {
		b.Fatal(err)
	}
	ns := uniqueNS(b)
	plain, withJob := stream(ns, "plain"), stream(ns, "with-job")
	events := []store.NewEvent{{Type: "function.updated", Data: data}}
	meta := store.Metadata{Actor: "bench", RequestID: "req"}

	var tRaw, tAppend, tJob time.Duration
	var version int64
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := pool.Exec(ctx, `INSERT INTO bench_raw (stream_id, data) VALUES ($1, $2)`, plain, raw); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := s.Append(ctx, plain, version, events, meta); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := s.Append(ctx, withJob, version, events, meta, noteJob("bench")); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		version++
		tRaw += t1.Sub(t0)
		tAppend += t2.Sub(t1)
		tJob += t3.Sub(t2)
	}
	n := float64(version)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(n/tRaw.Seconds(), "raw_inserts/s")
	b.ReportMetric(n/tAppend.Seconds(), "appends/s")
	b.ReportMetric(n/tJob.Seconds(), "appends+job/s")
	b.ReportMetric(tRaw.Seconds()/tAppend.Seconds(), "append/raw")
	b.ReportMetric(tRaw.Seconds()/tJob.Seconds(), "append+job/raw")
}
