package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slessio/sless/store"
	"github.com/slessio/sless/workers"
)

// TestRunsAreRecordedAsInvocations: every job run lands in the invocation log
// with the status a caller would see (200 ok, 500 failed, 504 timed out).
func TestRunsAreRecordedAsInvocations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := setup(t)
	writer := h.api.NewInvocationWriter(store.InvocationWriterOptions{FlushInterval: 10 * time.Millisecond})
	t.Cleanup(func() { _ = writer.Close(context.Background()) })
	h.start(func(c *workers.Config) { c.Invocations = writer })
	h.readyFunction("task", pySpec)

	h.createJob("ok", "task", scriptedRun{Stdout: "hi\n{\"a\": 1}\n"}, 1)
	h.createJob("bad", "task", scriptedRun{Stderr: "ValueError: no\n", Exit: 1}, 1)
	h.createJob("slow", "task", scriptedRun{TimedOut: true}, 1)
	for _, name := range []string{"ok", "bad", "slow"} {
		h.finished(name, 1)
	}
	want := map[string]int{"ok/1": 200, "bad/1": 500, "slow/1": 504}
	h.eventually(10*time.Second, func() error {
		if err := writer.Flush(ctx); err != nil {
			return err
		}
		page, err := h.api.ListInvocations(ctx, store.InvocationQuery{Namespace: h.ns, Function: "task"})
		if err != nil {
			return err
		}
		got := map[string]int{}
		for _, inv := range page.Invocations {
			if inv.Trigger != store.InvocationJob || inv.Version != 1 {
				return fmt.Errorf("record %+v: want a job run of version 1", inv)
			}
			got[inv.Path] = inv.Status
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("recorded %v, want %v", got, want)
		}
		return nil
	})
	page, _ := h.api.ListInvocations(ctx, store.InvocationQuery{Namespace: h.ns, Function: "task", StatusMin: 500, StatusMax: 500})
	if len(page.Invocations) != 1 {
		t.Fatalf("failed runs: %+v", page.Invocations)
	}
	full, err := h.api.GetInvocation(ctx, h.ns, "task", page.Invocations[0].ID)
	if err != nil || full.Log != "ValueError: no\n" || full.Error != "ValueError: no" {
		t.Fatalf("failed run record = %+v, %v; want its stderr as log and error", full, err)
	}
}

// TestInvocationPartitionsFollowRetention: on start the leader creates the
// days ahead and drops days older than the retention.
func TestInvocationPartitionsFollowRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := setup(t)
	now := time.Now().UTC()
	old := now.AddDate(0, 0, -30)
	if err := h.api.EnsureInvocationPartitions(ctx, old, old); err != nil {
		t.Fatal(err)
	}
	h.start(func(c *workers.Config) { c.InvocationRetention = 7 * 24 * time.Hour })
	day := func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC) }
	h.eventually(15*time.Second, func() error {
		days, err := h.api.InvocationPartitions(ctx)
		if err != nil {
			return err
		}
		have := map[time.Time]bool{}
		for _, d := range days {
			have[d.UTC()] = true
		}
		if have[day(old)] {
			return fmt.Errorf("the partition of %s is still there: %v", day(old), days)
		}
		for i := 0; i <= 3; i++ {
			if d := day(now.AddDate(0, 0, i)); !have[d] {
				return fmt.Errorf("no partition for %s ahead: %v", d, days)
			}
		}
		return nil
	})
}
