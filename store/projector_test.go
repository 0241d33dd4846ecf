package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
)

func TestProjectorRunsInTheAppendTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	id, token := stream(testutil.UniqueNS(t), "f"), testutil.UniqueNS(t)
	var projected []store.Event
	s.SetProjector(func(ctx context.Context, tx pgx.Tx, evs []store.Event, state store.Aggregate) error {
		if state != nil {
			return errors.New("a plain append has no aggregate to pass")
		}
		for _, ev := range evs {
			// The projector sees its own events through the append's transaction.
			var n int
			if err := tx.QueryRow(ctx, "SELECT count(*) FROM events WHERE position = $1", ev.Position).Scan(&n); err != nil {
				return err
			}
			if n != 1 {
				return errors.New("event not visible to the projector")
			}
			projected = append(projected, ev)
		}
		return nil
	})
	got, err := s.Append(ctx, id, 0, []store.NewEvent{
		{Type: "a", Data: map[string]any{"z": 1, "a": []int{1}}},
		{Type: "b", Data: token},
	}, store.Metadata{Actor: "alice"}, noteJob(token))
	if err != nil {
		t.Fatal(err)
	}
	if len(projected) != 2 || projected[0].Type != "a" || projected[1].Type != "b" {
		t.Fatalf("projector saw %+v, want events a then b", projected)
	}
	read, err := s.ReadStream(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range read {
		// What the projector got now is what a replay will give it later.
		if string(projected[i].Data) != string(read[i].Data) || projected[i].Position != read[i].Position ||
			projected[i].TxID != read[i].TxID || projected[i].Metadata != read[i].Metadata || got[i].Position != read[i].Position {
			t.Errorf("projected %+v, stored %+v", projected[i], read[i])
		}
	}
}

func TestProjectorErrorRollsEverythingBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	id, token := stream(testutil.UniqueNS(t), "f"), testutil.UniqueNS(t)
	s.SetProjector(func(ctx context.Context, tx pgx.Tx, evs []store.Event, _ store.Aggregate) error {
		for _, ev := range evs {
			if ev.Type == "boom" {
				return domain.Errorf(domain.EUNPROCESSABLE, "cannot project %s", ev.Type)
			}
		}
		return nil
	})
	_, err := s.Append(ctx, id, 0, []store.NewEvent{{Type: "fine", Data: 1}, {Type: "boom", Data: 2}}, store.Metadata{}, noteJob(token))
	testutil.RequireCode(t, err, domain.EUNPROCESSABLE)
	if events, jobs := counts(t, id, token); events != 0 || jobs != 0 {
		t.Fatalf("after a projector error: %d events, %d jobs; want none", events, jobs)
	}
}
