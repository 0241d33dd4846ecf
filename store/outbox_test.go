package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// counts returns how many events the stream has and how many outbox jobs carry token.
func counts(t *testing.T, streamID, token string) (events, jobs int) {
	t.Helper()
	err := pgtest.Pool(t).QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM events WHERE stream_id = $1),
		(SELECT count(*) FROM river_job WHERE kind = $2 AND args->>'token' = $3)`,
		streamID, noteArgs{}.Kind(), token).Scan(&events, &jobs)
	if err != nil {
		t.Fatal(err)
	}
	return events, jobs
}

var errAbort = errors.New("abort")

func TestOutboxRollbackLeavesNeitherEventsNorJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	id, token := stream(testutil.UniqueNS(t), "f"), testutil.UniqueNS(t)

	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.AppendTx(ctx, tx, id, 0, []store.NewEvent{{Type: "version.created", Data: token}}, store.Metadata{}); err != nil {
			return err
		}
		if _, err := s.InsertJobsTx(ctx, tx, []river.InsertManyParams{noteJob(token)}); err != nil {
			return err
		}
		// Inside the transaction both exist.
		var jobs int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE args->>'token' = $1", token).Scan(&jobs); err != nil || jobs != 1 {
			t.Errorf("inside the transaction: %d jobs (%v), want 1", jobs, err)
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("InTx returned %v, want the callback's error", err)
	}
	if events, jobs := counts(t, id, token); events != 0 || jobs != 0 {
		t.Fatalf("after rollback: %d events, %d jobs; want none", events, jobs)
	}
}

func TestOutboxCommitLeavesBoth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	id, token := stream(testutil.UniqueNS(t), "f"), testutil.UniqueNS(t)

	if _, err := s.Append(ctx, id, 0, []store.NewEvent{{Type: "version.created", Data: token}}, store.Metadata{}, noteJob(token)); err != nil {
		t.Fatal(err)
	}
	if events, jobs := counts(t, id, token); events != 1 || jobs != 1 {
		t.Fatalf("after commit: %d events, %d jobs; want 1 and 1", events, jobs)
	}

	// The same through InTx, as a worker does when it also completes its job.
	token2 := testutil.UniqueNS(t)
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.AppendTx(ctx, tx, id, 1, []store.NewEvent{{Type: "version.built", Data: token2}}, store.Metadata{}); err != nil {
			return err
		}
		_, err := s.InsertJobsTx(ctx, tx, []river.InsertManyParams{noteJob(token2)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if events, jobs := counts(t, id, token2); events != 2 || jobs != 1 {
		t.Fatalf("after InTx commit: %d events, %d jobs; want 2 and 1", events, jobs)
	}
}

func TestOutboxFailedJobInsertRollsBackEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	id, token := stream(testutil.UniqueNS(t), "f"), testutil.UniqueNS(t)
	bad := river.InsertManyParams{Args: noteArgs{Token: token}, InsertOpts: &river.InsertOpts{Priority: 99}}

	_, err := s.Append(ctx, id, 0, []store.NewEvent{{Type: "version.created", Data: token}}, store.Metadata{}, noteJob(token), bad)
	if err == nil {
		t.Fatal("Append with an invalid job succeeded")
	}
	if events, jobs := counts(t, id, token); events != 0 || jobs != 0 {
		t.Fatalf("after a failed job insert: %d events, %d jobs; want none", events, jobs)
	}
}

func TestJobsWithoutRiverClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.New(pgtest.Pool(t), nil)
	s.SetProjector(nil)
	id, token := stream(testutil.UniqueNS(t), "f"), testutil.UniqueNS(t)
	_, err := s.Append(ctx, id, 0, []store.NewEvent{{Type: "version.created", Data: token}}, store.Metadata{}, noteJob(token))
	testutil.RequireCode(t, err, domain.EINTERNAL)
	if events, _ := counts(t, id, token); events != 0 {
		t.Fatalf("%d events appended although the jobs could not be", events)
	}
	// Without jobs such a store appends fine.
	if _, err := s.Append(ctx, id, 0, []store.NewEvent{{Type: "version.created", Data: token}}, store.Metadata{}); err != nil {
		t.Fatal(err)
	}
}

// TestHasUnfinishedJob: a job waiting or running counts; one discarded,
// cancelled, completed or deleted does not; args match by containment.
func TestHasUnfinishedJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	token := testutil.UniqueNS(t)
	has := func() bool {
		t.Helper()
		var found bool
		if _, err := s.Execute(ctx, store.Metadata{}, func(tx *store.Tx) error {
			var err error
			found, err = tx.HasUnfinishedJob(ctx, noteArgs{Token: token})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return found
	}
	if has() {
		t.Fatal("a job found before any was inserted")
	}
	if err := s.InTx(ctx, func(tx pgx.Tx) error {
		_, err := s.InsertJobsTx(ctx, tx, []river.InsertManyParams{noteJob(token), noteJob(testutil.UniqueNS(t))})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	pool := pgtest.Pool(t)
	for _, state := range []string{"available", "running", "retryable", "scheduled", "pending", "discarded", "cancelled", "completed"} {
		if _, err := pool.Exec(ctx, `UPDATE river_job SET state = $2::text::river_job_state,
			finalized_at = CASE WHEN $2::text IN ('discarded', 'cancelled', 'completed') THEN now() END
			WHERE args->>'token' = $1`, token, state); err != nil {
			t.Fatal(err)
		}
		want := state != "discarded" && state != "cancelled" && state != "completed"
		if got := has(); got != want {
			t.Errorf("job %s: unfinished %v, want %v", state, got, want)
		}
	}
	if _, err := pool.Exec(ctx, `DELETE FROM river_job WHERE args->>'token' = $1`, token); err != nil {
		t.Fatal(err)
	}
	if has() {
		t.Fatal("a deleted job found")
	}

	// Requeue inserts only while none is unfinished.
	requeue := func() bool {
		t.Helper()
		var inserted bool
		if _, err := s.Execute(ctx, store.Metadata{}, func(tx *store.Tx) error {
			var err error
			inserted, err = tx.Requeue(ctx, noteArgs{Token: token})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return inserted
	}
	if !requeue() || !has() {
		t.Fatal("Requeue inserted nothing for a lost job")
	}
	if requeue() {
		t.Fatal("Requeue inserted a second job while one is available")
	}
	if _, jobs := counts(t, "none", token); jobs != 1 {
		t.Fatalf("%d jobs after two requeues, want 1", jobs)
	}
}
