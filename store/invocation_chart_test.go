package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
)

func recordAll(t *testing.T, s *store.Store, invs ...store.Invocation) {
	t.Helper()
	w := s.NewInvocationWriter(store.InvocationWriterOptions{Logger: discardLogger()})
	for _, inv := range invs {
		if !w.Record(inv) {
			t.Fatal("record dropped")
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Written != uint64(len(invs)) {
		t.Fatalf("writer stats %+v, want %d written", st, len(invs))
	}
}

// TestInvocationHistogram: buckets are half-open, zero-filled, cross a
// partition (midnight UTC), count 5xx and failed calls as errors but not a
// client abort (499), and leave out other namespaces and functions without
// calls in the range.
func TestInvocationHistogram(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	ns, other := testutil.UniqueNS(t), testutil.UniqueNS(t)
	since := day(time.Now()).Add(-5 * time.Minute) // 23:55 yesterday
	at := func(d time.Duration) time.Time { return since.Add(d) }
	inv := func(ns, fn string, start time.Duration, status int, errText string) store.Invocation {
		return store.Invocation{Namespace: ns, Function: fn, Status: status, Error: errText, StartedAt: at(start), Duration: time.Millisecond}
	}
	recordAll(t, s,
		inv(ns, "a", 0, 200, ""),
		inv(ns, "a", 30*time.Second, 500, ""),
		inv(ns, "a", time.Minute-time.Microsecond, 499, "the client went away"),
		inv(ns, "a", 3*time.Minute, 413, "the body is over 6 MiB"),
		inv(ns, "a", 5*time.Minute, 200, ""), // midnight: today's partition
		inv(ns, "b", 10*time.Minute-time.Microsecond, 200, "boom"),
		inv(ns, "b", 10*time.Minute, 500, ""), // the end is outside
		inv(ns, "b", -time.Microsecond, 500, ""),
		inv(ns, "c", -time.Hour, 200, ""),
		inv(ns, "c", time.Hour, 200, ""),
		inv(other, "a", time.Minute, 500, ""),
	)

	type want map[int][2]int // bucket → count, errors; the others are zero
	check := func(width time.Duration, buckets int, exp map[string]want) {
		t.Helper()
		got, err := s.InvocationHistogram(ctx, ns, since, width, buckets)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(exp) {
			t.Fatalf("width %v: functions %v, want %d", width, got, len(exp))
		}
		for fn, w := range exp {
			bs, ok := got[fn]
			if !ok || len(bs) != buckets {
				t.Fatalf("width %v: %s has %d buckets, want %d", width, fn, len(bs), buckets)
			}
			for i, b := range bs {
				if !b.Start.Equal(since.Add(time.Duration(i) * width)) {
					t.Fatalf("width %v: %s bucket %d starts %v, want %v", width, fn, i, b.Start, since.Add(time.Duration(i)*width))
				}
				if e := w[i]; b.Count != e[0] || b.Errors != e[1] {
					t.Errorf("width %v: %s bucket %d has %d calls, %d errors; want %d, %d", width, fn, i, b.Count, b.Errors, e[0], e[1])
				}
			}
		}
	}
	check(time.Minute, 10, map[string]want{
		"a": {0: {3, 1}, 3: {1, 1}, 5: {1, 0}},
		"b": {9: {1, 1}},
	})
	check(5*time.Minute, 2, map[string]want{
		"a": {0: {4, 2}, 1: {1, 0}},
		"b": {1: {1, 1}},
	})
	check(time.Minute, 1, map[string]want{"a": {0: {3, 1}}})

	got, err := s.InvocationHistogram(ctx, testutil.UniqueNS(t), since, time.Minute, 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("a namespace without calls: %v, %v", got, err)
	}
	for _, bad := range []struct {
		width   time.Duration
		buckets int
	}{{0, 10}, {-time.Minute, 10}, {time.Nanosecond, 10}, {time.Minute + 1, 10}, {time.Minute, 0}, {time.Minute, -1},
		{time.Minute, 1001}, {200 * 365 * 24 * time.Hour, 1000}} {
		_, err := s.InvocationHistogram(ctx, ns, since, bad.width, bad.buckets)
		testutil.RequireCode(t, err, domain.EINVALID)
	}
}

func TestInvocationMark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	ns, other := testutil.UniqueNS(t), testutil.UniqueNS(t)
	since := time.Now().UTC().Truncate(time.Microsecond).Add(-time.Hour)
	at := func(d time.Duration) time.Time { return since.Add(d) }

	n, last, err := s.InvocationMark(ctx, ns, since)
	if err != nil || n != 0 || !last.IsZero() {
		t.Fatalf("mark of nothing: %d, %v, %v", n, last, err)
	}
	recordAll(t, s,
		store.Invocation{Namespace: ns, Function: "a", Status: 200, StartedAt: at(-time.Second), EndedAt: at(10 * time.Second)},
		store.Invocation{Namespace: ns, Function: "a", Status: 200, StartedAt: at(0), EndedAt: at(2 * time.Second)},
		store.Invocation{Namespace: ns, Function: "b", Status: 500, StartedAt: at(time.Second), EndedAt: at(1500 * time.Millisecond)},
		store.Invocation{Namespace: other, Function: "a", Status: 200, StartedAt: at(5 * time.Second), EndedAt: at(20 * time.Second)},
	)
	n, last, err = s.InvocationMark(ctx, ns, since)
	if err != nil || n != 2 || !last.Equal(at(2*time.Second)) || last.Location() != time.UTC {
		t.Fatalf("mark: %d, %v, %v; want 2, %v", n, last, err, at(2*time.Second))
	}
	recordAll(t, s, store.Invocation{Namespace: ns, Function: "c", Status: 200, StartedAt: at(time.Minute), EndedAt: at(time.Minute)})
	n2, last2, err := s.InvocationMark(ctx, ns, since)
	if err != nil || n2 != 3 || !last2.Equal(at(time.Minute)) {
		t.Fatalf("mark after one more call: %d, %v, %v", n2, last2, err)
	}
}
