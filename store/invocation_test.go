package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// pageAll reads every page of q and fails on a repeated id or an order break.
func pageAll(t *testing.T, s *store.Store, q store.InvocationQuery) []store.Invocation {
	t.Helper()
	var all []store.Invocation
	seen := map[uuid.UUID]bool{}
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("pagination does not end")
		}
		page, err := s.ListInvocations(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, inv := range page.Invocations {
			if seen[inv.ID] {
				t.Fatalf("invocation %s on two pages", inv.ID)
			}
			seen[inv.ID] = true
			if n := len(all); n > 0 {
				prev := all[n-1]
				if prev.StartedAt.Before(inv.StartedAt) || prev.StartedAt.Equal(inv.StartedAt) && strings.Compare(prev.ID.String(), inv.ID.String()) < 0 {
					t.Fatalf("not newest first: %v %s then %v %s", prev.StartedAt, prev.ID, inv.StartedAt, inv.ID)
				}
			}
			all = append(all, inv)
		}
		if page.NextCursor == "" {
			return all
		}
		q.Cursor = page.NextCursor
	}
}

func TestInvocationLogPagesEveryRecordOnceNewestFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	w := s.NewInvocationWriter(store.InvocationWriterOptions{BatchSize: 300, Logger: discardLogger()})
	ns, fn := "sless-"+testutil.UniqueNS(t)[1:]+"00000000", "fn"
	// 3,000 invocations over three days; groups of three share a microsecond,
	// so the id must break ties for the cursor.
	base := time.Now().UTC().Truncate(time.Microsecond).Add(-50 * time.Hour)
	want := map[uuid.UUID]store.Invocation{}
	for i := range 3000 {
		at := base.Add(time.Duration(i/3) * time.Minute)
		inv := store.Invocation{ID: store.NewInvocationID(at), Namespace: ns, Function: fn, Version: 1 + i%2,
			Trigger: store.InvocationHTTP, Method: "POST", Path: fmt.Sprintf("/p/%d", i), Status: []int{200, 404, 500}[i%3],
			Duration: time.Duration(i) * time.Microsecond, BytesIn: int64(i), BytesOut: int64(2 * i),
			Log: fmt.Sprintf("log %d", i), StartedAt: at}
		if !w.Record(inv) {
			t.Fatal("record dropped")
		}
		want[inv.ID] = inv
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Written != 3000 || st.Dropped != 0 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}

	all := pageAll(t, s, store.InvocationQuery{Namespace: ns, Function: fn, Limit: 257})
	if len(all) != len(want) {
		t.Fatalf("listed %d invocations, want %d", len(all), len(want))
	}
	for _, got := range all {
		exp := want[got.ID]
		if got.Path != exp.Path || got.Status != exp.Status || got.Duration != exp.Duration || !got.StartedAt.Equal(exp.StartedAt) ||
			got.BytesIn != exp.BytesIn || got.BytesOut != exp.BytesOut || got.Version != exp.Version || got.Log != "" {
			t.Fatalf("listed %+v, want %+v (without log)", got, exp)
		}
	}

	// Status and time filters, with pages.
	since, until := base.Add(10*time.Hour), base.Add(30*time.Hour)
	errs := pageAll(t, s, store.InvocationQuery{Namespace: ns, Function: fn, StatusMin: 500, StatusMax: 599, Since: since, Until: until, Limit: 50})
	n := 0
	for _, inv := range want {
		if inv.Status >= 500 && !inv.StartedAt.Before(since) && inv.StartedAt.Before(until) {
			n++
		}
	}
	if len(errs) != n || n == 0 {
		t.Fatalf("5xx in range: listed %d, want %d", len(errs), n)
	}
	for _, inv := range errs {
		if inv.Status != 500 || inv.StartedAt.Before(since) || !inv.StartedAt.Before(until) {
			t.Fatalf("filter let through %+v", inv)
		}
	}

	// One invocation with its log.
	for id, exp := range want {
		got, err := s.GetInvocation(ctx, ns, fn, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Log != exp.Log || got.ID != id {
			t.Fatalf("get %s: %+v", id, got)
		}
		_, err = s.GetInvocation(ctx, ns, "other", id)
		testutil.RequireCode(t, err, domain.ENOTFOUND)
		break
	}
	_, err := s.GetInvocation(ctx, ns, fn, store.NewInvocationID(time.Now()))
	testutil.RequireCode(t, err, domain.ENOTFOUND)
	_, err = s.ListInvocations(ctx, store.InvocationQuery{Namespace: ns, Function: fn, Cursor: "bm9wZQ"})
	testutil.RequireCode(t, err, domain.EINVALID)
}

func TestInvocationWriterFillsInAndCapsRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	w := s.NewInvocationWriter(store.InvocationWriterOptions{Logger: discardLogger()})
	ns := "sless-" + testutil.UniqueNS(t)[1:] + "00000000"
	long := strings.Repeat("é", store.MaxInvocationLog) + "the end\x00"
	w.Record(store.Invocation{Namespace: ns, Function: "f", Status: 200, Duration: 1500 * time.Microsecond, Log: long,
		Error: strings.Repeat("x", 5000)})
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListInvocations(ctx, store.InvocationQuery{Namespace: ns, Function: "f"})
	if err != nil || len(page.Invocations) != 1 {
		t.Fatalf("%v %+v", err, page)
	}
	inv := page.Invocations[0]
	if inv.ID.Version() != 7 || inv.Trigger != store.InvocationHTTP || inv.EndedAt.Sub(inv.StartedAt) != 1500*time.Microsecond ||
		time.Since(inv.StartedAt) > time.Minute || len(inv.Error) > store.MaxInvocationError {
		t.Fatalf("filled in %+v", inv)
	}
	full, err := s.GetInvocation(ctx, ns, "f", inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Log) > store.MaxInvocationLog || !strings.HasSuffix(full.Log, "the end") || !strings.HasPrefix(full.Log, "[sless: log truncated]") {
		t.Fatalf("log of %d bytes: %q...%q", len(full.Log), full.Log[:40], full.Log[len(full.Log)-10:])
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if w.Record(store.Invocation{Namespace: ns, Function: "f"}) {
		t.Fatal("Record after Close queued a record")
	}
}

// TestInvocationWriterStoresEdgeValues writes records whose fields sit at
// the edges of their column types and reads every field back: the COPY
// encoding must store exactly what the record says, after the writer's
// documented filling in (UTC, whole microseconds, EndedAt, Trigger, no NUL
// in the log).
func TestInvocationWriterStoresEdgeValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.New(pgtest.NewDB(t), nil) // a database of its own: empty namespaces and functions
	w := s.NewInvocationWriter(store.InvocationWriterOptions{Logger: discardLogger()})
	now := time.Now()
	pacific := time.FixedZone("UTC-7", -7*3600)
	in := []store.Invocation{
		{Namespace: "sless-edge", Function: "typical", Version: 3, Method: "GET", Path: "/", Status: 200,
			Duration: 1234567 * time.Nanosecond, ColdStart: true, BytesIn: 10, BytesOut: 20, StartedAt: now.In(pacific)},
		{Trigger: store.InvocationJob, StartedAt: now}, // every string empty, every number zero
		{Namespace: "sless-edge", Function: "fünf-函数", Version: 1, Trigger: store.InvocationCron, Method: "PÖST",
			Path: "/ünïcode/日本語/🙂?q=é", Status: 500, Duration: time.Second, Error: "échec: 失敗 🙁",
			Log: "ligne 1\nzwei\x00drei 🙂\n", StartedAt: now.Add(-time.Hour)},
		{Namespace: "sless-edge", Function: "typical", Version: math.MaxInt32, Status: math.MaxInt32, Duration: -1500 * time.Nanosecond,
			ColdStart: true, BytesIn: math.MaxInt64, BytesOut: math.MinInt64, Log: strings.Repeat("ж", 1000),
			StartedAt: time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC), // just before PostgreSQL's epoch
			EndedAt:   time.Date(1999, 12, 31, 23, 0, 0, 1, pacific)},
		{Namespace: "sless-edge", Function: "typical", Version: math.MinInt32, Status: -1, Duration: math.MaxInt64,
			BytesIn: -1, StartedAt: time.Date(2000, 1, 1, 0, 0, 0, 1000, time.UTC)},
		{Namespace: "sless-edge", Function: "typical", Duration: time.Microsecond, BytesOut: math.MaxInt64,
			StartedAt: time.Date(2999, 6, 15, 12, 0, 0, 1000, time.UTC)},
	}
	want := map[uuid.UUID]store.Invocation{}
	for _, inv := range in {
		inv.ID = store.NewInvocationID(inv.StartedAt)
		if !w.Record(inv) {
			t.Fatal("record dropped")
		}
		inv.StartedAt = inv.StartedAt.UTC().Truncate(time.Microsecond)
		if inv.EndedAt.IsZero() {
			inv.EndedAt = inv.StartedAt.Add(inv.Duration)
		}
		inv.EndedAt = inv.EndedAt.UTC().Truncate(time.Microsecond)
		inv.Duration = inv.Duration.Truncate(time.Microsecond)
		if inv.Trigger == "" {
			inv.Trigger = store.InvocationHTTP
		}
		inv.Log = strings.ReplaceAll(inv.Log, "\x00", "")
		want[inv.ID] = inv
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Written != uint64(len(in)) || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}

	same := func(got, exp store.Invocation) bool {
		if !got.StartedAt.Equal(exp.StartedAt) || !got.EndedAt.Equal(exp.EndedAt) {
			return false
		}
		got.StartedAt, got.EndedAt, exp.StartedAt, exp.EndedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		return got == exp
	}
	listed := 0
	for _, fn := range [][2]string{{"sless-edge", "typical"}, {"", ""}, {"sless-edge", "fünf-函数"}} {
		page, err := s.ListInvocations(ctx, store.InvocationQuery{Namespace: fn[0], Function: fn[1]})
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range page.Invocations {
			exp := want[got.ID]
			exp.Log = "" // lists leave it out
			if !same(got, exp) {
				t.Errorf("listed\n%+v\nwant\n%+v", got, exp)
			}
			listed++
		}
	}
	if listed != len(in) {
		t.Fatalf("listed %d invocations, want %d", listed, len(in))
	}
	for id, exp := range want {
		got, err := s.GetInvocation(ctx, exp.Namespace, exp.Function, id)
		if err != nil {
			t.Fatal(err)
		}
		if !same(got, exp) {
			t.Errorf("got\n%+v\nwant\n%+v", got, exp)
		}
	}
}

// TestInvocationWriterDropsInsteadOfBlocking holds a lock on the log so the
// writer cannot write: Record must keep returning at once, count what does
// not fit, and Close must write what was queued once the lock is gone.
func TestInvocationWriterDropsInsteadOfBlocking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := store.New(pool, nil)
	w := s.NewInvocationWriter(store.InvocationWriterOptions{Buffer: 10, BatchSize: 5, FlushInterval: time.Millisecond, Logger: discardLogger()})
	ns := "sless-0000000000000001"
	if err := w.Flush(ctx); err != nil { // partitions made, writer idle
		t.Fatal(err)
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE invocations IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	queued := 0
	start := time.Now()
	for i := range 100 {
		if w.Record(store.Invocation{Namespace: ns, Function: "f", Status: 200, Path: fmt.Sprint(i)}) {
			queued++
		}
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("100 Records took %v with the database blocked", d)
	}
	st := w.Stats()
	// The writer holds one batch (5) in hand and 10 in the buffer.
	if queued > 15 || queued < 10 || st.Dropped != uint64(100-queued) {
		t.Fatalf("queued %d, stats %+v", queued, st)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM invocations WHERE namespace = $1`, ns).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != queued || w.Stats().Written != uint64(queued) {
		t.Fatalf("%d rows stored, %d queued, stats %+v", n, queued, w.Stats())
	}
}

func TestInvocationPartitionsRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := store.New(pool, nil)
	now := time.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	if err := s.EnsureInvocationPartitions(ctx, today.AddDate(0, 0, -10), today.AddDate(0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureInvocationPartitions(ctx, today.AddDate(0, 0, -10), today); err != nil { // again: no change
		t.Fatal(err)
	}
	days, err := s.InvocationPartitions(ctx)
	if err != nil || len(days) != 12 {
		t.Fatalf("%d partitions (%v), want 12", len(days), err)
	}
	err = s.EnsureInvocationPartitions(ctx, today, today.AddDate(0, 0, -1))
	testutil.RequireCode(t, err, domain.EINVALID)

	w := s.NewInvocationWriter(store.InvocationWriterOptions{Logger: discardLogger()})
	ns := "sless-0000000000000002"
	for _, age := range []int{10, 8, 7, 6, 0} {
		w.Record(store.Invocation{Namespace: ns, Function: "f", Status: 200, StartedAt: today.AddDate(0, 0, -age).Add(time.Hour)})
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// Retention of 7 days at noon today: the days before today-7 go, whole.
	dropped, err := s.DropInvocationPartitionsBefore(ctx, today.Add(12*time.Hour).Add(-store.DefaultInvocationRetention))
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 3 || dropped[0] != "invocations_p"+today.AddDate(0, 0, -10).Format("20060102") {
		t.Fatalf("dropped %v", dropped)
	}
	page, err := s.ListInvocations(ctx, store.InvocationQuery{Namespace: ns, Function: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Invocations) != 3 || day(page.Invocations[2].StartedAt) != today.AddDate(0, 0, -7) {
		t.Fatalf("kept %+v", page.Invocations)
	}

	// A late record for a dropped day makes its partition again (the writer
	// believed it existed), and the next cleanup takes it.
	w.Record(store.Invocation{Namespace: ns, Function: "f", Status: 200, StartedAt: today.AddDate(0, 0, -9)})
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Written != 6 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if dropped, _ := s.DropInvocationPartitionsBefore(ctx, today.AddDate(0, 0, -7)); len(dropped) != 1 {
		t.Fatalf("dropped %v", dropped)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
