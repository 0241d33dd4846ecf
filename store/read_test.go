package store_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// follower reads the whole log with ReadAll the way an asynchronous projector
// would, remembering its cursor.
type follower struct {
	s      *store.Store
	cursor store.Cursor
	seen   []store.Event
}

func (f *follower) poll(t *testing.T) []store.Event {
	t.Helper()
	events, next, err := f.s.ReadAll(context.Background(), f.cursor, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 && next != f.cursor {
		t.Fatalf("cursor moved from %+v to %+v without events", f.cursor, next)
	}
	f.cursor = next
	f.seen = append(f.seen, events...)
	return events
}

// pollUntil polls until the follower has seen n events. Transactions of other
// tests anywhere on the server hold the snapshot's xmin back for a moment.
func (f *follower) pollUntil(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(f.seen) < n {
		if time.Now().After(deadline) {
			t.Fatalf("follower saw %d events after 30s, want %d", len(f.seen), n)
		}
		if len(f.poll(t)) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(f.seen) > n {
		t.Fatalf("follower saw %d events, want %d: %+v", len(f.seen), n, f.seen)
	}
}

func begin(t *testing.T, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

func appendTx(t *testing.T, s *store.Store, tx pgx.Tx, streamID string) store.Event {
	t.Helper()
	evs, err := s.AppendTx(context.Background(), tx, streamID, 0, []store.NewEvent{{Type: "test.happened", Data: map[string]string{}}}, store.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	return evs[0]
}

func commit(t *testing.T, tx pgx.Tx) {
	t.Helper()
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestReadAllWaitsForEarlierPosition: T1 takes a lower position than T2 but
// commits after it. A position cursor would pass T1's event while it is still
// invisible and never see it; ReadAll holds back until T1 is done.
func TestReadAllWaitsForEarlierPosition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := setupOn(t, pool)
	f := &follower{s: s}

	t1 := begin(t, pool)
	e1 := appendTx(t, s, t1, "function:ns/first")
	t2 := begin(t, pool)
	e2 := appendTx(t, s, t2, "function:ns/second")
	commit(t, t2)
	if !(e1.Position < e2.Position && e1.TxID < e2.TxID) {
		t.Fatalf("setup: want T1 before T2 in position and tx id, got %+v and %+v", e1, e2)
	}

	// What a naive "position > last" reader sees now: T2's event only. Its
	// cursor would move to e2.Position and skip e1 forever.
	rows, _ := pool.Query(ctx, "SELECT position FROM events ORDER BY position")
	visible, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(visible, []int64{e2.Position}) {
		t.Fatalf("setup: plainly visible positions %v, want only %d", visible, e2.Position)
	}

	if got := f.poll(t); len(got) != 0 {
		t.Fatalf("while T1 is open ReadAll returned %+v; it must not pass T1's event", got)
	}
	commit(t, t1)
	f.pollUntil(t, 2)
	if f.seen[0].Position != e1.Position || f.seen[1].Position != e2.Position {
		t.Fatalf("follower saw positions %d, %d; want %d then %d", f.seen[0].Position, f.seen[1].Position, e1.Position, e2.Position)
	}
}

// TestReadAllOrdersByTransaction: T2 has the older transaction id but the
// higher position and commits first. The follower gets T2's event while T1 is
// open; T1's event, with the lower position, still comes after it.
func TestReadAllOrdersByTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := setupOn(t, pool)
	f := &follower{s: s}

	t2 := begin(t, pool)
	if _, err := t2.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil { // takes T2's id now
		t.Fatal(err)
	}
	t1 := begin(t, pool)
	e1 := appendTx(t, s, t1, "function:ns/first")
	e2 := appendTx(t, s, t2, "function:ns/second")
	if !(e1.Position < e2.Position && e1.TxID > e2.TxID) {
		t.Fatalf("setup: want T1 with the lower position and the higher tx id, got %+v and %+v", e1, e2)
	}
	commit(t, t2)

	f.pollUntil(t, 1)
	if f.seen[0].Position != e2.Position {
		t.Fatalf("while T1 is open the follower saw %+v, want T2's event", f.seen[0])
	}
	if f.cursor.Position <= e1.Position {
		t.Fatalf("setup: cursor position %d should now be past T1's %d", f.cursor.Position, e1.Position)
	}
	commit(t, t1)
	f.pollUntil(t, 2)
	if f.seen[1].Position != e1.Position {
		t.Fatalf("after T1 committed the follower saw %+v, want T1's event", f.seen[1])
	}
}

func TestReadAllPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := setupOn(t, pool)
	var want []int64
	for i := range 25 {
		evs, err := s.Append(ctx, stream("ns", string(rune('a'+i))), 0,
			[]store.NewEvent{{Type: "test.happened", Data: i}}, store.Metadata{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, evs[0].Position)
	}
	var got []int64
	cursor := store.Cursor{}
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		events, next, err := s.ReadAll(ctx, cursor, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) > 7 {
			t.Fatalf("page of %d events, limit 7", len(events))
		}
		for _, ev := range events {
			got = append(got, ev.Position)
		}
		cursor = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged positions %v, want %v", got, want)
	}
}

func TestReadNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	ns, other := testutil.UniqueNS(t), testutil.UniqueNS(t)
	a, b := stream(ns, "a"), stream(ns, "b")
	var positions []int64
	for _, id := range []string{a, b, stream(other, "a"), a} {
		v, _ := s.StreamVersion(ctx, id)
		evs, err := s.Append(ctx, id, v, []store.NewEvent{{Type: "test.happened", Data: id}}, store.Metadata{Actor: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		positions = append(positions, evs[0].Position)
	}
	pos := func(evs []store.Event) []int64 {
		var out []int64
		for _, ev := range evs {
			out = append(out, ev.Position)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		stream string
		after  int64
		limit  int
		want   []int64
	}{
		{"all of the namespace", "", 0, 0, []int64{positions[0], positions[1], positions[3]}},
		{"one stream", a, 0, 0, []int64{positions[0], positions[3]}},
		{"after a position", "", positions[0], 0, []int64{positions[1], positions[3]}},
		{"limited", "", 0, 1, []int64{positions[0]}},
		{"unknown stream", stream(ns, "zzz"), 0, 0, nil},
	} {
		got, err := s.ReadNamespace(ctx, ns, tc.stream, tc.after, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(pos(got), tc.want) {
			t.Errorf("%s: positions %v, want %v", tc.name, pos(got), tc.want)
		}
		for _, ev := range got {
			if ev.Namespace != ns || ev.Metadata.Actor != "bob" {
				t.Errorf("%s: event %+v from the wrong namespace or without metadata", tc.name, ev)
			}
		}
	}
}

// nsFollower follows one namespace with ReadNamespaceSince, like the console's
// event stream.
type nsFollower struct {
	s      *store.Store
	ns     string
	cursor store.Cursor
	seen   []store.Event
}

func (f *nsFollower) poll(t *testing.T, limit int) []store.Event {
	t.Helper()
	events, next, err := f.s.ReadNamespaceSince(context.Background(), f.ns, f.cursor, limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 && next != f.cursor {
		t.Fatalf("cursor moved from %+v to %+v without events", f.cursor, next)
	}
	if limit > 0 && len(events) > limit {
		t.Fatalf("page of %d events, limit %d", len(events), limit)
	}
	for _, ev := range events {
		if ev.Namespace != f.ns {
			t.Fatalf("event of namespace %q in the stream of %q: %+v", ev.Namespace, f.ns, ev)
		}
	}
	f.cursor = next
	f.seen = append(f.seen, events...)
	return events
}

func (f *nsFollower) pollUntil(t *testing.T, n, limit int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(f.seen) < n {
		if time.Now().After(deadline) {
			t.Fatalf("follower of %s saw %d events after 30s, want %d", f.ns, len(f.seen), n)
		}
		if len(f.poll(t, limit)) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(f.seen) > n {
		t.Fatalf("follower of %s saw %d events, want %d: %+v", f.ns, len(f.seen), n, f.seen)
	}
}

// TestReadNamespaceSinceWaitsForEarlierPosition is TestReadAllWaitsForEarlierPosition
// for one namespace, with the events of another namespace in between.
func TestReadNamespaceSinceWaitsForEarlierPosition(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	s := setupOn(t, pool)
	f := &nsFollower{s: s, ns: "ns"}

	t1 := begin(t, pool)
	e1 := appendTx(t, s, t1, "function:ns/first")
	t2 := begin(t, pool)
	appendTx(t, s, t2, "function:other/x")
	e2 := appendTx(t, s, t2, "function:ns/second")
	appendTx(t, s, t2, "function:other/y")
	commit(t, t2)
	if !(e1.Position < e2.Position && e1.TxID < e2.TxID) {
		t.Fatalf("setup: want T1 before T2 in position and tx id, got %+v and %+v", e1, e2)
	}
	if got := f.poll(t, 0); len(got) != 0 {
		t.Fatalf("while T1 is open ReadNamespaceSince returned %+v; it must not pass T1's event", got)
	}
	if head, err := s.NamespaceHead(context.Background(), "ns"); err != nil || head != (store.Cursor{}) {
		t.Fatalf("head while T1 is open: %+v, %v; want the zero cursor", head, err)
	}
	commit(t, t1)
	f.pollUntil(t, 2, 0)
	if f.seen[0].Position != e1.Position || f.seen[1].Position != e2.Position {
		t.Fatalf("follower saw positions %d, %d; want %d then %d", f.seen[0].Position, f.seen[1].Position, e1.Position, e2.Position)
	}
	if f.cursor != (store.Cursor{TxID: e2.TxID, Position: e2.Position}) {
		t.Fatalf("cursor %+v after e2 %+v", f.cursor, e2)
	}
}

// TestReadNamespaceSinceOrdersByTransaction is TestReadAllOrdersByTransaction
// for one namespace: T2's event, older transaction but higher position, comes
// first, and T1's is not lost behind the cursor.
func TestReadNamespaceSinceOrdersByTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := setupOn(t, pool)
	f := &nsFollower{s: s, ns: "ns"}

	t2 := begin(t, pool)
	if _, err := t2.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
		t.Fatal(err)
	}
	t1 := begin(t, pool)
	e1 := appendTx(t, s, t1, "function:ns/first")
	e2 := appendTx(t, s, t2, "function:ns/second")
	commit(t, t2)
	f.pollUntil(t, 1, 0)
	if f.seen[0].Position != e2.Position {
		t.Fatalf("while T1 is open the follower saw %+v, want T2's event", f.seen[0])
	}
	head, err := s.NamespaceHead(ctx, "ns")
	if err != nil || head != f.cursor {
		t.Fatalf("head %+v (%v), want the follower's cursor %+v", head, err, f.cursor)
	}
	commit(t, t1)
	f.pollUntil(t, 2, 0)
	if f.seen[1].Position != e1.Position {
		t.Fatalf("after T1 committed the follower saw %+v, want T1's event", f.seen[1])
	}
}

func TestReadNamespaceSincePages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	ns, other := testutil.UniqueNS(t), testutil.UniqueNS(t)
	var want []int64
	for i := range 30 {
		id := stream(ns, string(rune('a'+i%5)))
		if i%3 == 1 {
			id = stream(other, string(rune('a'+i)))
		}
		v, _ := s.StreamVersion(ctx, id)
		evs, err := s.Append(ctx, id, v, []store.NewEvent{{Type: "test.happened", Data: i}}, store.Metadata{Actor: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		if i%3 != 1 {
			want = append(want, evs[0].Position)
		}
	}
	f := &nsFollower{s: s, ns: ns}
	f.pollUntil(t, len(want), 4)
	var got []int64
	for _, ev := range f.seen {
		got = append(got, ev.Position)
		if ev.Metadata.Actor != "bob" || ev.StreamID == "" || len(ev.Data) == 0 {
			t.Fatalf("event without its fields: %+v", ev)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged positions %v, want %v", got, want)
	}
	head, err := s.NamespaceHead(ctx, ns)
	if err != nil || head != f.cursor {
		t.Fatalf("head %+v (%v), want the last event's cursor %+v", head, err, f.cursor)
	}
	if head, err := s.NamespaceHead(ctx, testutil.UniqueNS(t)); err != nil || head != (store.Cursor{}) {
		t.Fatalf("head of an empty namespace %+v, %v", head, err)
	}
}

// TestNamespaceHeadFollowsFromNow: a reader starting at NamespaceHead gets
// exactly what commits afterwards, including an event of a transaction that
// was open (with a lower position) when it took the head.
func TestNamespaceHeadFollowsFromNow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := setupOn(t, pool)
	var third store.Cursor
	for i := range 3 {
		evs, err := s.Append(ctx, stream("ns", fmt.Sprint(i)), 0, []store.NewEvent{{Type: "test.happened", Data: i}}, store.Metadata{})
		if err != nil {
			t.Fatal(err)
		}
		third = store.Cursor{TxID: evs[0].TxID, Position: evs[0].Position}
	}
	open := begin(t, pool)
	late := appendTx(t, s, open, "function:ns/late")

	// Transactions of other tests on the server may hold the head back a moment.
	var head store.Cursor
	testutil.Eventually(t, 30*time.Second, func() error {
		var err error
		if head, err = s.NamespaceHead(ctx, "ns"); err == nil && head != third {
			err = fmt.Errorf("head %+v, want the third event %+v (the open transaction is %d)", head, third, late.TxID)
		}
		return err
	})
	f := &nsFollower{s: s, ns: "ns", cursor: head}
	if got := f.poll(t, 0); len(got) != 0 {
		t.Fatalf("from the head, before anything new: %+v", got)
	}
	after, err := s.Append(ctx, stream("ns", "after"), 0, []store.NewEvent{{Type: "test.happened", Data: 0}}, store.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, open)
	f.pollUntil(t, 2, 0)
	if f.seen[0].Position != late.Position || f.seen[1].Position != after[0].Position {
		t.Fatalf("from the head the follower saw %+v; want the late event, then the newer one", f.seen)
	}
}

func TestCursorString(t *testing.T) {
	t.Parallel()
	for _, c := range []store.Cursor{{}, {TxID: 1, Position: 2}, {TxID: 761, Position: 40213}, {TxID: math.MaxUint64, Position: math.MaxInt64}} {
		s := c.String()
		if strings.ContainsAny(s, " \r\n\x00") || len(s) > 40 {
			t.Errorf("%+v: %q is not a compact header value", c, s)
		}
		got, err := store.ParseCursor(s)
		if err != nil || got != c {
			t.Errorf("ParseCursor(%q) = %+v, %v; want %+v", s, got, err, c)
		}
	}
	if (store.Cursor{TxID: 1, Position: 23}).String() == (store.Cursor{TxID: 12, Position: 3}).String() {
		t.Error("two cursors share a string")
	}
	for _, bad := range []string{"", "-", "1", "1-", "-1", "a-b", "1-2-3", "1--2", "+1-2", "1-+2", " 1-2", "1-2 ", "01-2", "1-02",
		"18446744073709551616-1", "1-9223372036854775808", "1_2", "1.2"} {
		_, err := store.ParseCursor(bad)
		testutil.RequireCode(t, err, domain.EINVALID)
	}
}
