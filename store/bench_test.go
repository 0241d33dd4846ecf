package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
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
	ns := testutil.UniqueNS(b)
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

// BenchmarkFiringCronTriggers measures what a cron tick reads, 200 cron
// triggers in 20 namespaces (each activated twice), interleaved in one loop:
//
//   - streams, the baseline: the reads of a tick before ListFiringCronTriggers
//     (every function, the triggers of each namespace, and the stream of each
//     firing trigger replayed for when it became active);
//   - query: ListFiringCronTriggers, one query.
//
// Run it with:
//
//	go test ./store -run '^$' -bench FiringCron -benchtime 50x
func BenchmarkFiringCronTriggers(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewDB(b)
	const namespaces, perNamespace = 20, 10
	for range namespaces {
		p := setupProjected(b, pool)
		p.fn(b, "fn", func(f *domain.Function) ([]domain.Event, error) {
			return f.Create(domain.FunctionSpec{Runtime: "python3.11"}, p.tick())
		})
		p.fn(b, "fn", func(f *domain.Function) ([]domain.Event, error) {
			evs, _, err := f.Upload(domain.Code{Digest: "sha256:b", ZipKey: "zip/b", ContextKey: "ctx/b"}, p.tick())
			return evs, err
		})
		p.fn(b, "fn", func(f *domain.Function) ([]domain.Event, error) { return f.StartBuild(1, p.tick()) })
		p.fn(b, "fn", func(f *domain.Function) ([]domain.Event, error) { return f.SucceedBuild(1, "img", "", p.tick()) })
		for i := range perNamespace {
			name := fmt.Sprintf("tick-%d", i)
			p.trigger(b, name, func(tr *domain.Trigger) ([]domain.Event, error) {
				return tr.Create(domain.TriggerSpec{Type: "cron", Function: "fn", Schedule: "* * * * *", Enabled: true}, p.tick())
			})
			for _, on := range []bool{true, false, true} {
				p.trigger(b, name, func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetActive(on, p.tick()), nil })
			}
		}
	}
	s := store.New(pool, nil)
	var tStreams, tQuery time.Duration
	for b.Loop() {
		t0 := time.Now()
		if n := firingByStreams(b, s); n != namespaces*perNamespace {
			b.Fatalf("streams found %d", n)
		}
		t1 := time.Now()
		ts, err := s.ListFiringCronTriggers(ctx)
		if err != nil || len(ts) != namespaces*perNamespace {
			b.Fatalf("query found %d: %v", len(ts), err)
		}
		tQuery += time.Since(t1)
		tStreams += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(tStreams.Seconds()*1000/n, "streams-ms/tick")
	b.ReportMetric(tQuery.Seconds()*1000/n, "query-ms/tick")
	b.ReportMetric(tStreams.Seconds()/tQuery.Seconds(), "streams/query")
}

// firingByStreams is the baseline of BenchmarkFiringCronTriggers: the reads
// a cron tick did before ListFiringCronTriggers.
func firingByStreams(b *testing.B, s *store.Store) int {
	ctx := context.Background()
	fns, err := s.ListAllFunctions(ctx)
	if err != nil {
		b.Fatal(err)
	}
	built := map[[2]string]bool{}
	var namespaces []string
	for _, f := range fns {
		if f.ActiveVersion == 0 {
			continue
		}
		if len(namespaces) == 0 || namespaces[len(namespaces)-1] != f.Namespace {
			namespaces = append(namespaces, f.Namespace)
		}
		built[[2]string{f.Namespace, f.Name}] = true
	}
	n := 0
	for _, ns := range namespaces {
		ts, err := s.ListTriggers(ctx, ns, "")
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range ts {
			if t.Type != domain.TriggerCron || !t.Enabled || !t.Active || !built[[2]string{ns, t.Function}] {
				continue
			}
			evs, err := s.ReadStream(ctx, domain.TriggerStream(ns, t.Name), 1)
			if err != nil {
				b.Fatal(err)
			}
			for _, ev := range evs {
				if _, err := domain.DecodeEvent(ev.Type, ev.Data); err != nil {
					b.Fatal(err)
				}
			}
			n++
		}
	}
	return n
}

// typicalInvocation is a record as the proxy makes one for a request.
func typicalInvocation(i int) store.Invocation {
	return store.Invocation{Namespace: "sless-0123456789abcdef", Function: "hello", Version: 3,
		Method: "GET", Path: fmt.Sprintf("/fn/sless-0123456789abcdef/hello/api/items?id=%d", i), Status: 200,
		Duration: 1200 * time.Microsecond, BytesIn: 128, BytesOut: 2048, StartedAt: time.Now()}
}

// BenchmarkInvocationWriterCopy measures what the proxy's process spends to
// store a batch of typical records: Record of each, then Flush. A busy proxy
// writes batches of 512 and more; a quiet one, a few records every
// FlushInterval. It reports the CPU time of this process (user and system,
// so the writer's goroutines and the driver's count, the server's not) per
// record, and the wall time per batch; allocs/op are per batch.
//
//	go test ./store -run '^$' -bench InvocationWriterCopy -benchtime 200x
func BenchmarkInvocationWriterCopy(b *testing.B) {
	for _, batch := range []int{16, 512} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			ctx := context.Background()
			s := store.New(pgtest.NewDB(b), nil)
			w := s.NewInvocationWriter(store.InvocationWriterOptions{BatchSize: batch, FlushInterval: time.Hour})
			defer w.Close(ctx)
			invs := make([]store.Invocation, batch)
			for i := range invs {
				invs[i] = typicalInvocation(i)
			}
			if err := w.Flush(ctx); err != nil { // the partitions are made
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0, t0 := processCPU(b), time.Now()
			for b.Loop() {
				for _, inv := range invs {
					w.Record(inv)
				}
				if err := w.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			cpu, wall := processCPU(b)-cpu0, time.Since(t0)
			if st := w.Stats(); st.Failed != 0 || st.Dropped != 0 {
				b.Fatalf("stats %+v", st)
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*batch), "cpu-ns/record")
			b.ReportMetric(float64(wall.Microseconds())/float64(b.N), "µs/batch")
		})
	}
}

// BenchmarkInvocationWriterEncode measures the writer's COPY encoding of a
// batch of 512 typical records into its reused buffer, without a database.
//
//	go test ./store -run '^$' -bench InvocationWriterEncode
func BenchmarkInvocationWriterEncode(b *testing.B) {
	invs := make([]store.Invocation, 512)
	for i := range invs {
		invs[i] = typicalInvocation(i)
		invs[i].ID = store.NewInvocationID(invs[i].StartedAt)
	}
	buf := store.EncodeInvocationCopy(nil, invs)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		buf = store.EncodeInvocationCopy(buf, invs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(invs)), "ns/record")
}

// processCPU is the user and system CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
