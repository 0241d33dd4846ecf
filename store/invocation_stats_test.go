package store_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// TestFunctionInvocationStats: both windows are half-open from the past,
// (now−w, now], and cross midnight (two daily partitions); errors are
// 5xx except an interrupted run, not a caller gone (499) or a refusal
// (429); p50 and p99 are recorded durations (percentile_disc); other
// functions and namespaces are left out.
func TestFunctionInvocationStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	ns, other := testutil.UniqueNS(t), testutil.UniqueNS(t)
	now := day(time.Now()).Add(30 * time.Minute) // 00:30 today: the hour starts yesterday
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	type row struct {
		ns, fn  string
		ago     time.Duration
		trigger store.TriggerKind
		status  int
		took    time.Duration
		cold    bool
		err     string
	}
	rows := []row{
		// The hour: 10, 20, 30, 40 ms; one error, one cold start.
		{ns, "f", 0, store.InvocationHTTP, 200, ms(10), true, ""},
		{ns, "f", 30 * time.Minute, store.InvocationHTTP, 500, ms(40), false, ""},
		{ns, "f", 45 * time.Minute, store.InvocationHTTP, 499, ms(30), false, "the client went away"},
		{ns, "f", time.Hour - time.Microsecond, store.InvocationCron, 503, ms(20), false, "interrupted by shutdown"},
		// The rest of the day: 1, 2, 50, 100, 1000, 5000 ms; three errors, two cold starts.
		{ns, "f", time.Hour, store.InvocationJob, 504, ms(1000), true, "timed out"},
		{ns, "f", 3 * time.Hour, store.InvocationHTTP, 503, ms(5000), true, "the function could not be started"},
		{ns, "f", 10 * time.Hour, store.InvocationHTTP, 429, ms(2), false, "serving its limit"},
		{ns, "f", 12 * time.Hour, store.InvocationJob, 500, ms(100), false, "exit 1"},
		{ns, "f", 13 * time.Hour, store.InvocationJob, 503, ms(50), false, "interrupted by a crash"},
		{ns, "f", 24*time.Hour - time.Microsecond, store.InvocationAPI, 200, ms(1), false, ""},
		// Outside: the day's start, the future, another function, another namespace.
		{ns, "f", 24 * time.Hour, store.InvocationHTTP, 500, ms(7), true, ""},
		{ns, "f", -time.Microsecond, store.InvocationHTTP, 500, ms(7), true, ""},
		{ns, "g", time.Minute, store.InvocationHTTP, 500, ms(7), true, ""},
		{other, "f", time.Minute, store.InvocationHTTP, 500, ms(7), true, ""},
	}
	var invs []store.Invocation
	for _, r := range rows {
		invs = append(invs, store.Invocation{Namespace: r.ns, Function: r.fn, Trigger: r.trigger, Status: r.status,
			Duration: r.took, ColdStart: r.cold, Error: r.err, StartedAt: now.Add(-r.ago)})
	}
	recordAll(t, s, invs...)

	got, err := s.FunctionInvocationStats(ctx, ns, "f", now)
	if err != nil {
		t.Fatal(err)
	}
	want := store.FunctionStats{
		Hour: store.InvocationStats{Window: time.Hour, Until: now, Count: 4, Errors: 1, ColdStarts: 1, P50: ms(20), P99: ms(40)},
		Day:  store.InvocationStats{Window: 24 * time.Hour, Until: now, Count: 10, Errors: 4, ColdStarts: 3, P50: ms(30), P99: ms(5000)},
	}
	if got != want {
		t.Fatalf("stats\n got %+v\nwant %+v", got, want)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"hour per minute", got.Hour.PerMinute(), 4.0 / 60},
		{"hour error %", got.Hour.ErrorPercent(), 25},
		{"day per minute", got.Day.PerMinute(), 10.0 / 1440},
		{"day error %", got.Day.ErrorPercent(), 40},
	} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	none, err := s.FunctionInvocationStats(ctx, ns, "never-called", now)
	if err != nil {
		t.Fatal(err)
	}
	if none.Hour.Count != 0 || none.Day != (store.InvocationStats{Window: 24 * time.Hour, Until: now}) ||
		none.Day.PerMinute() != 0 || none.Day.ErrorPercent() != 0 {
		t.Fatalf("a function without invocations: %+v", none)
	}
}

// TestFunctionInvocationStatsPercentiles: on hundreds of invocations p50
// and p99 are the nearest ranks (percentile_disc), not the largest value nor
// an interpolation.
func TestFunctionInvocationStatsPercentiles(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ns := testutil.UniqueNS(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	var invs []store.Invocation
	for i := 1; i <= 200; i++ { // the hour: 1..200 ms
		invs = append(invs, store.Invocation{Namespace: ns, Function: "f", Status: 200, Duration: time.Duration(i) * time.Millisecond,
			StartedAt: now.Add(-time.Duration(i) * 10 * time.Second)})
	}
	for i := 1; i <= 100; i++ { // earlier that day: 1001..1100 ms
		invs = append(invs, store.Invocation{Namespace: ns, Function: "f", Status: 200, Duration: time.Duration(1000+i) * time.Millisecond,
			StartedAt: now.Add(-2*time.Hour - time.Duration(i)*time.Minute)})
	}
	recordAll(t, s, invs...)
	got, err := s.FunctionInvocationStats(context.Background(), ns, "f", now)
	if err != nil {
		t.Fatal(err)
	}
	h, d := got.Hour, got.Day
	if h.Count != 200 || h.P50 != 100*time.Millisecond || h.P99 != 198*time.Millisecond {
		t.Errorf("hour: %d calls, p50 %v, p99 %v; want 200, 100ms, 198ms", h.Count, h.P50, h.P99)
	}
	if d.Count != 300 || d.P50 != 150*time.Millisecond || d.P99 != 1097*time.Millisecond {
		t.Errorf("day: %d calls, p50 %v, p99 %v; want 300, 150ms, 1.097s", d.Count, d.P50, d.P99)
	}
}

// TestFunctionInvocationStatsPlan: on a log of many functions over several
// days, the stats read the two partitions the day touches, along the
// (namespace, function, started_at) index, and no other function's row.
func TestFunctionInvocationStatsPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := setupOn(t, pool)
	now := day(time.Now()).Add(12 * time.Hour)
	if err := s.EnsureInvocationPartitions(ctx, now.AddDate(0, 0, -4), now.AddDate(0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	// 100 functions in 10 namespaces, an invocation each every 4 minutes for 4 days: 144,000 rows.
	if _, err := pool.Exec(ctx, `INSERT INTO invocations (id, namespace, function, trigger_kind, status, duration_us, cold_start, started_at, ended_at)
		SELECT gen_random_uuid(), 'ns-' || i % 10, 'f' || i % 100, 'http', CASE WHEN i % 7 = 0 THEN 500 ELSE 200 END, i % 1000, i % 50 = 0,
			$1::timestamptz - (i / 100) * interval '4 minutes', $1::timestamptz
		FROM generate_series(0, 143999) i`, now); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE invocations`); err != nil {
		t.Fatal(err)
	}
	plan := explain(t, pool, true, store.FunctionStatsSQL, "ns-7", "f17", now.Add(-24*time.Hour), now.Add(-time.Hour), now)
	var parts, indexes []string
	plan.walk(func(n planNode) {
		if n.NodeType == "Seq Scan" || n.RemovedByFilt > 0 {
			t.Errorf("%s node with %v rows removed by filter in the plan %+v", n.NodeType, n.RemovedByFilt, plan)
		}
		if strings.HasPrefix(n.RelationName, "invocations") {
			parts = append(parts, n.RelationName)
		}
		if n.IndexName != "" {
			indexes = append(indexes, n.IndexName)
		}
	})
	slices.Sort(parts)
	p := func(d time.Time) string { return "invocations_p" + d.Format("20060102") }
	if want := []string{p(now.AddDate(0, 0, -1)), p(now)}; !slices.Equal(parts, want) {
		t.Errorf("the stats read %v, want %v", parts, want)
	}
	for _, ix := range indexes {
		if !strings.HasSuffix(ix, "_namespace_function_started_at_id_idx") {
			t.Errorf("the stats read index %s, want the partitions' (namespace, function, started_at, id)", ix)
		}
	}
	if len(indexes) != 2 {
		t.Errorf("the stats read indexes %v, want one per partition", indexes)
	}

	got, err := s.FunctionInvocationStats(ctx, "ns-7", "f17", now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hour.Count != 15 || got.Day.Count != 360 {
		t.Errorf("stats %+v, want 15 calls in the hour and 360 in the day", got)
	}
}
