package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// TestRunningBuildShowsItsOutput: while a version builds, GetVersion's log is
// the output so far (its newest MaxBuildProgress bytes); once the outcome is
// recorded the log is the whole one of the event, and the output is gone.
func TestRunningBuildShowsItsOutput(t *testing.T) {
	p := setupProjected(t, pgtest.Pool(t))
	ctx := context.Background()
	now := func() time.Time { return p.tick() }
	p.fn(t, "slow", func(f *domain.Function) ([]domain.Event, error) {
		return f.Create(domain.FunctionSpec{Runtime: "python3.11"}, now())
	})
	p.fn(t, "slow", func(f *domain.Function) ([]domain.Event, error) {
		evs, _, err := f.Upload(domain.Code{Digest: "sha256:s", ZipKey: "zip/s", ContextKey: "ctx/s"}, now())
		return evs, err
	})
	// Output of a build that has not started shows nowhere.
	if err := p.AppendBuildProgress(ctx, p.ns, "slow", 1, "early\n"); err != nil {
		t.Fatal(err)
	}
	if v, err := p.GetVersion(ctx, p.ns, "slow", 1); err != nil || v.BuildLog != "" {
		t.Fatalf("a queued version's log = %q, %v", v.BuildLog, err)
	}
	if err := p.ClearBuildProgress(ctx, p.ns, "slow", 1); err != nil {
		t.Fatal(err)
	}
	p.fn(t, "slow", func(f *domain.Function) ([]domain.Event, error) { return f.StartBuild(1, now()) })
	for _, chunk := range []string{"Processing ./slowpkg\n", "Building wheel", " for slowpkg\n"} {
		if err := p.AppendBuildProgress(ctx, p.ns, "slow", 1, chunk); err != nil {
			t.Fatal(err)
		}
	}
	v, err := p.GetVersion(ctx, p.ns, "slow", 1)
	if err != nil || v.BuildLog != "Processing ./slowpkg\nBuilding wheel for slowpkg\n" {
		t.Fatalf("a building version's log = %q, %v", v.BuildLog, err)
	}
	// A chatty build: the newest bytes are kept.
	if err := p.AppendBuildProgress(ctx, p.ns, "slow", 1, strings.Repeat("x", store.MaxBuildProgress)+"end\n"); err != nil {
		t.Fatal(err)
	}
	if v, _ = p.GetVersion(ctx, p.ns, "slow", 1); len(v.BuildLog) != store.MaxBuildProgress || !strings.HasSuffix(v.BuildLog, "xend\n") {
		t.Fatalf("after 64 KiB more: %d bytes ending %q", len(v.BuildLog), v.BuildLog[max(0, len(v.BuildLog)-8):])
	}
	p.fn(t, "slow", func(f *domain.Function) ([]domain.Event, error) {
		return f.SucceedBuild(1, "img", "the whole log", now())
	})
	if err := p.ClearBuildProgress(ctx, p.ns, "slow", 1); err != nil {
		t.Fatal(err)
	}
	if v, _ = p.GetVersion(ctx, p.ns, "slow", 1); v.BuildLog != "the whole log" {
		t.Fatalf("a built version's log = %q, want the event's", v.BuildLog)
	}
}
