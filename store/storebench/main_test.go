package storebench

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// measuredRun reports whether this call of a benchmark is the one that
// measures: the first, with b.N = 1. The sizes here take minutes to build,
// so -benchtime 2s must not repeat them for a larger b.N.
func measuredRun(b *testing.B) bool {
	if b.N > 1 {
		b.ReportMetric(0, "ns/op")
		return false
	}
	return true
}

// smoke reports whether this is CI's smoke run (-short): small sizes, every
// code path, no target judged.
func smoke() bool { return testing.Short() }

// pick returns full in a full run and small in a smoke run.
func pick[T any](full, small T) T {
	if smoke() {
		return small
	}
	return full
}

// newPool opens a pool of its own on a new, migrated database (pgtest's
// pools have 4 connections; the ingest and the loaders want their own).
func newPool(b *testing.B, maxConns int32) *pgxpool.Pool {
	b.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDBURL(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// percentile returns the p-th percentile (0 < p ≤ 100) of ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(float64(len(s))*p/100+0.999999) - 1
	return s[max(0, min(rank, len(s)-1))]
}

// median returns the median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// verdict says whether a value met its target; a smoke run judges nothing.
func verdict(met bool) string {
	switch {
	case smoke():
		return "not judged (smoke run)"
	case met:
		return "met"
	default:
		return "MISSED"
	}
}

// report reports one metric and logs its readable line.
func report(b *testing.B, value float64, unit, line string, args ...any) {
	b.Helper()
	b.ReportMetric(value, unit)
	b.Log(fmt.Sprintf(line, args...))
}

// processCPU is the user and system CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
