package store_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// TestEnqueueAsyncIdempotency: a key dedupes within the 24 h window (the
// first invocation comes back, not created; another request under it is
// UNPROCESSABLE), and past the window it is released to a new invocation.
func TestEnqueueAsyncIdempotency(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	ns := testutil.UniqueNS(t)
	at := time.Now().UTC().Truncate(time.Microsecond)
	inv := func(at time.Time) store.AsyncInvocation {
		return store.AsyncInvocation{ID: store.NewInvocationID(at), Namespace: ns, Function: "f", IdempotencyKey: "k",
			Request: store.AsyncRequest{Method: "POST", Path: "/", Body: []byte("a")}, EnqueuedAt: at}
	}
	first, created, err := s.EnqueueAsync(ctx, inv(at), []byte("hash-a"), noteJob("1"))
	if err != nil || !created || first.State != domain.AsyncQueued {
		t.Fatalf("first: %+v %v %v", first, created, err)
	}
	again, created, err := s.EnqueueAsync(ctx, inv(at.Add(time.Hour)), []byte("hash-a"), noteJob("2"))
	if err != nil || created || again.ID != first.ID {
		t.Fatalf("within the window: %v created %v, %v; want %v", again.ID, created, err, first.ID)
	}
	if _, _, err := s.EnqueueAsync(ctx, inv(at.Add(time.Hour)), []byte("hash-b"), noteJob("3")); domain.ErrorCode(err) != domain.EUNPROCESSABLE {
		t.Fatalf("another request under the key: %v, want UNPROCESSABLE", err)
	}
	later, created, err := s.EnqueueAsync(ctx, inv(at.Add(domain.IdempotencyWindow+time.Minute)), []byte("hash-b"), noteJob("4"))
	if err != nil || !created || later.ID == first.ID {
		t.Fatalf("past the window: %v created %v, %v; want a new invocation", later.ID, created, err)
	}
	old, err := s.GetAsync(ctx, ns, "f", first.ID)
	if err != nil || old.IdempotencyKey != "" {
		t.Fatalf("the first keeps its row without the key: %+v, %v", old, err)
	}
}

// TestClaimAsync: a claim counts attempts; a bound of 1 makes a second
// claim Busy until the first one's lease passes; an invocation older than
// its max age is Expired; a finished one is Finished.
func TestClaimAsync(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	ns := testutil.UniqueNS(t)
	now := time.Now().UTC()
	var ids []store.AsyncInvocation
	for i := range 2 {
		a := store.AsyncInvocation{ID: store.NewInvocationID(now), Namespace: ns, Function: "f",
			Request: store.AsyncRequest{Method: "POST", Path: "/"}, EnqueuedAt: now.Add(time.Duration(i) * time.Millisecond)}
		a, _, err := s.EnqueueAsync(ctx, a, []byte{byte(i)}, noteJob("c"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a)
	}
	a, res, err := s.ClaimAsync(ctx, ids[0].ID, 1, time.Hour, now, time.Minute)
	if err != nil || res != store.Claimed || a.AttemptCount != 1 {
		t.Fatalf("first claim: %v %v %v", a.AttemptCount, res, err)
	}
	if _, res, err = s.ClaimAsync(ctx, ids[1].ID, 1, time.Hour, now, time.Minute); err != nil || res != store.Busy {
		t.Fatalf("second claim under a bound of 1: %v %v, want Busy", res, err)
	}
	if _, res, err = s.ClaimAsync(ctx, ids[1].ID, 1, time.Hour, now.Add(2*time.Minute), time.Minute); err != nil || res != store.Claimed {
		t.Fatalf("a claim after the first lease passed: %v %v, want Claimed", res, err)
	}
	if _, res, err = s.ClaimAsync(ctx, ids[0].ID, 0, time.Minute, now.Add(2*time.Minute), time.Minute); err != nil || res != store.Expired {
		t.Fatalf("a claim past the max age: %v %v, want Expired", res, err)
	}
	if _, err := s.Execute(ctx, store.Metadata{Actor: "test"}, func(tx *store.Tx) error {
		return s.FinishAsyncTx(ctx, tx.Tx, ids[0].ID, &store.AsyncAttempt{Attempt: 1, Status: 200}, domain.AsyncSucceeded,
			&store.AsyncResponse{Status: 200, Body: []byte("ok")}, "", now)
	}); err != nil {
		t.Fatal(err)
	}
	// An answer without a body (a 204, a 500 with none) is kept as empty.
	if _, err := s.Execute(ctx, store.Metadata{Actor: "test"}, func(tx *store.Tx) error {
		return s.FinishAsyncTx(ctx, tx.Tx, ids[1].ID, &store.AsyncAttempt{Attempt: 1, Status: 500}, domain.AsyncFailed,
			&store.AsyncResponse{Status: 500}, "failed", now)
	}); err != nil {
		t.Fatalf("an answer without a body: %v", err)
	}
	got, res, err := s.ClaimAsync(ctx, ids[0].ID, 0, time.Hour, now, time.Minute)
	if err != nil || res != store.Finished || got.State != domain.AsyncSucceeded || string(got.Response.Body) != "ok" || len(got.Attempts) != 1 {
		t.Fatalf("a finished invocation: %+v %v %v", got, res, err)
	}
}

// TestEnqueueAsyncGroups: enqueues without a key arriving together are
// committed in groups, each stored whole with its delivery job.
func TestEnqueueAsyncGroups(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	ns := testutil.UniqueNS(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	const n = 300
	ids := make([]store.AsyncInvocation, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			a := store.AsyncInvocation{ID: store.NewInvocationID(now), Namespace: ns, Function: "g", EnqueuedAt: now,
				Request: store.AsyncRequest{Method: "PUT", Path: "/p", Query: "q=1", Headers: map[string][]string{"X-N": {strconv.Itoa(i)}},
					Body: []byte(strconv.Itoa(i))}}
			got, created, err := s.EnqueueAsync(ctx, a, []byte{1}, noteJob("g"+strconv.Itoa(i)))
			if err != nil || !created {
				t.Errorf("enqueue %d: %v %v", i, created, err)
			}
			ids[i] = got
		})
	}
	wg.Wait()
	for i, a := range ids {
		got, err := s.GetAsync(ctx, ns, "g", a.ID)
		if err != nil || got.State != domain.AsyncQueued || string(got.Request.Body) != strconv.Itoa(i) ||
			got.Request.Headers["X-N"][0] != strconv.Itoa(i) || got.Request.Method != "PUT" || got.Request.Query != "q=1" {
			t.Fatalf("invocation %d: %+v, %v", i, got, err)
		}
	}
	var jobs int
	if err := pgtest.Pool(t).QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'store_test_note' AND args->>'token' LIKE 'g%'`).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs < n {
		t.Fatalf("%d delivery jobs, want %d", jobs, n)
	}
}
