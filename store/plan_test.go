package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// planNode is the part of EXPLAIN (FORMAT JSON) these tests look at.
type planNode struct {
	NodeType      string     `json:"Node Type"`
	IndexName     string     `json:"Index Name"`
	RelationName  string     `json:"Relation Name"`
	RemovedByFilt float64    `json:"Rows Removed by Filter"`
	Plans         []planNode `json:"Plans"`
}

func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}

func explain(t *testing.T, pool *pgxpool.Pool, analyze bool, sql string, args ...any) planNode {
	t.Helper()
	var out []byte
	if err := pool.QueryRow(context.Background(), fmt.Sprintf("EXPLAIN (ANALYZE %t, FORMAT JSON) %s", analyze, sql), args...).Scan(&out); err != nil {
		t.Fatal(err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", out, err)
	}
	return plans[0].Plan
}

// TestReadNamespaceSincePlan: on a log of a hundred namespaces, following
// one of them reads only its events after the cursor (index conditions, no
// row read only to be thrown away: another namespace's, or one behind the
// cursor), and its head is one step back along the index on (namespace,
// tx_id, position).
func TestReadNamespaceSincePlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	for batch := range 40 { // 40,000 events in 40 transactions, 400 per namespace
		if _, err := pool.Exec(ctx, `INSERT INTO events (stream_id, stream_version, namespace, type, data)
			SELECT 'function:ns-' || i % 100 || '/f' || $1::int, i, 'ns-' || i % 100, 'test.happened', '{}'
			FROM generate_series(1, 1000) i`, batch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE events`); err != nil {
		t.Fatal(err)
	}
	at := func(offset int) store.Cursor {
		t.Helper()
		var c store.Cursor
		if err := pool.QueryRow(ctx, `SELECT tx_id, position FROM events WHERE namespace = 'ns-7'
			ORDER BY tx_id, position OFFSET $1 LIMIT 1`, offset).Scan(&c.TxID, &c.Position); err != nil {
			t.Fatal(err)
		}
		return c
	}

	check := func(name string, plan planNode, wantIndex string) {
		t.Helper()
		var indexes []string
		plan.walk(func(n planNode) {
			if n.NodeType == "Seq Scan" || n.RemovedByFilt > 0 {
				t.Errorf("%s: %s node with %v rows removed by filter in the plan %+v", name, n.NodeType, n.RemovedByFilt, plan)
			}
			if n.IndexName != "" {
				indexes = append(indexes, n.IndexName)
			}
		})
		if len(indexes) != 1 || !strings.HasPrefix(indexes[0], wantIndex) {
			t.Errorf("%s: plan reads indexes %v, want one %s*: %+v", name, indexes, wantIndex, plan)
		}
	}
	// Transactions anywhere on the server may hold the snapshot's xmin back
	// for a moment; the plans are only worth reading once the rows are visible.
	s := setupOn(t, pool)
	testutil.Eventually(t, 30*time.Second, func() error {
		if head, err := s.NamespaceHead(ctx, "ns-7"); err != nil || head != at(399) {
			return fmt.Errorf("head %+v (%v), want %+v", head, err, at(399))
		}
		return nil
	})
	// From the tail the planner may as well walk the whole log's index: the
	// last transaction is all there is after the cursor.
	for _, c := range []store.Cursor{{}, at(100), at(200)} {
		check(fmt.Sprintf("read from %v", c), explain(t, pool, true, store.ReadNamespaceSinceSQL, "ns-7", c.TxID, c.Position, 100),
			"events_namespace_")
	}
	check("head", explain(t, pool, true, store.NamespaceHeadSQL, "ns-7"), "events_namespace_tx_id_position_idx")

	events, next, err := s.ReadNamespaceSince(ctx, "ns-7", at(200), 0)
	if err != nil || len(events) != 199 || next != at(399) {
		t.Fatalf("read %d events from the middle (%v) up to %+v, want 199 up to %+v", len(events), err, next, at(399))
	}
}

// TestInvocationChartPlansPrune: the chart queries read only the daily
// partitions their range touches.
func TestInvocationChartPlansPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := setupOn(t, pool)
	today := day(time.Now())
	if err := s.EnsureInvocationPartitions(ctx, today.AddDate(0, 0, -10), today.AddDate(0, 0, 2)); err != nil {
		t.Fatal(err)
	}
	partitions := func(plan planNode) []string {
		var names []string
		plan.walk(func(n planNode) {
			if strings.HasPrefix(n.RelationName, "invocations") {
				names = append(names, n.RelationName)
			}
		})
		slices.Sort(names)
		return names
	}
	p := func(d time.Time) string { return "invocations_p" + d.Format("20060102") }

	since := today.AddDate(0, 0, -3).Add(-time.Hour) // 23:00 four days ago
	got := partitions(explain(t, pool, false, store.InvocationHistogramSQL, "ns", since, since.Add(2*time.Hour), int64(60e6)))
	if want := []string{p(today.AddDate(0, 0, -4)), p(today.AddDate(0, 0, -3))}; !slices.Equal(got, want) {
		t.Errorf("histogram over two hours around midnight reads %v, want %v", got, want)
	}
	got = partitions(explain(t, pool, false, store.InvocationMarkSQL, "ns", today.Add(time.Hour)))
	if want := []string{p(today), p(today.AddDate(0, 0, 1)), p(today.AddDate(0, 0, 2))}; !slices.Equal(got, want) {
		t.Errorf("mark since today reads %v, want %v", got, want)
	}
}
