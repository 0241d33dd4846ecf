package command_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// tracer records the round trips to PostgreSQL: a query (BEGIN and COMMIT
// included) or a batch is one each, and the statements a batch holds.
type tracer struct {
	mu     sync.Mutex
	trips  []string
	inList bool
}

func (tr *tracer) add(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.inList && !strings.HasPrefix(s, "SELECT pg_notify(") {
		tr.trips = append(tr.trips, s)
	}
}

func firstWords(sql string) string {
	f := strings.Fields(sql)
	return strings.Join(f[:min(4, len(f))], " ")
}

func (tr *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	tr.add(firstWords(d.SQL))
	return ctx
}
func (tr *tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (tr *tracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	tr.add(fmt.Sprintf("batch of %d", d.Batch.Len()))
	return ctx
}
func (tr *tracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (tr *tracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// record returns the round trips fn makes.
func (tr *tracer) record(fn func()) []string {
	tr.mu.Lock()
	tr.trips, tr.inList = nil, true
	tr.mu.Unlock()
	fn()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.inList = false
	return tr.trips
}

// TestRoundTripsPerCommand pins how many round trips to PostgreSQL the
// commands on the hot write path make (BEGIN and COMMIT included), so that
// one added by accident shows; the list printed with -v is the write path's
// anatomy. The route announcements are left out: they go after the COMMIT,
// on another connection, not waited for, one for the commands of the
// moment (store's route_notify.go).
func TestRoundTripsPerCommand(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	tr := &tracer{}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := command.New(command.Config{Store: store.New(pool, rc)})
	ns := testutil.UniqueNS(t)
	spec := domain.FunctionSpec{Runtime: "python3.11"}
	mem := 256
	for i := range 3 { // warm: the namespace exists, statements are prepared, River knows the server
		ref := command.Ref{Namespace: ns, Name: fmt.Sprintf("warm-%d", i)}
		if _, err := cmd.CreateFunction(ctx, meta, command.CreateFunctionInput{Namespace: ns, Name: ref.Name, Spec: spec}); err != nil {
			t.Fatal(err)
		}
		if _, err := cmd.UpdateFunction(ctx, meta, command.UpdateFunctionInput{Ref: ref, Patch: command.FunctionPatch{MemoryMB: &mem}}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		max  int
		run  func() error
	}{
		{"create", 4, func() error {
			_, err := cmd.CreateFunction(ctx, meta, command.CreateFunctionInput{Namespace: ns, Name: "measured", Spec: spec})
			return err
		}},
		{"update", 5, func() error {
			_, err := cmd.UpdateFunction(ctx, meta, command.UpdateFunctionInput{Ref: command.Ref{Namespace: ns, Name: "measured"},
				Patch: command.FunctionPatch{MemoryMB: &mem}})
			return err
		}},
	}
	for _, c := range cases {
		var err error
		trips := tr.record(func() { err = c.run() })
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d round trips: %s", c.name, len(trips), strings.Join(trips, " | "))
		if len(trips) > c.max {
			t.Errorf("%s makes %d round trips, want at most %d: %s", c.name, len(trips), c.max, strings.Join(trips, " | "))
		}
	}
}
