package workers

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
)

func TestDueSlot(t *testing.T) {
	t.Parallel()
	every5, _ := domain.ParseCron("*/5 * * * *")
	noon, _ := domain.ParseCron("0 12 * * *")
	tm := func(h, m, s int) time.Time { return time.Date(2030, 1, 1, h, m, s, 0, time.UTC) }
	cases := []struct {
		name        string
		s           domain.Schedule
		since, now  time.Time
		want        time.Time
		wantSkipped int
	}{
		{"nothing due yet", every5, tm(10, 0, 0), tm(10, 4, 59), time.Time{}, 0},
		{"one slot", every5, tm(10, 0, 0), tm(10, 5, 0), tm(10, 5, 0), 0},
		{"the since slot itself is not due again", every5, tm(10, 5, 0), tm(10, 7, 0), time.Time{}, 0},
		{"missed slots collapse into the latest", every5, tm(10, 0, 0), tm(10, 31, 0), tm(10, 30, 0), 5},
		{"daily", noon, tm(11, 0, 0), tm(12, 0, 30), tm(12, 0, 0), 0},
	}
	for _, c := range cases {
		got, skipped := dueSlot(c.s, c.since, c.now)
		if !got.Equal(c.want) || skipped != c.wantSkipped {
			t.Errorf("%s: dueSlot = %v, skipped %d; want %v, %d", c.name, got, skipped, c.want, c.wantSkipped)
		}
	}
}

func TestDesiredOf(t *testing.T) {
	t.Parallel()
	f := domain.NewFunction("ns", "fn")
	now := time.Now()
	for _, ev := range []domain.Event{
		domain.FunctionCreated{Namespace: "ns", Name: "fn", Config: domain.FunctionConfig{Runtime: domain.RuntimePython311}, At: now},
		domain.VersionCreated{Version: 1, Digest: "d1", At: now},
		domain.BuildSucceeded{Version: 1, Image: "img1", At: now},
		domain.VersionActivated{Version: 1, At: now},
		domain.VersionCreated{Version: 2, Digest: "d2", At: now}, // building: v1 stays what runs
	} {
		f.Apply(ev)
	}
	httpOn := domain.Trigger{Exists: true, Type: domain.TriggerHTTP, Function: "fn", Enabled: true}
	cronOn := domain.Trigger{Exists: true, Type: domain.TriggerCron, Function: "fn", Enabled: true}
	if d := desiredOf(f, []domain.Trigger{cronOn}); d.version != 1 || d.replicas != 0 || d.workload.Image != "img1" {
		t.Errorf("only a cron trigger: %+v; want v1 at zero replicas", d)
	}
	if d := desiredOf(f, []domain.Trigger{cronOn, httpOn}); d.version != 1 || d.replicas != 1 {
		t.Errorf("an enabled http trigger: %+v; want v1 running", d)
	}
	f.Apply(domain.FunctionDeleted{At: now})
	if d := desiredOf(f, []domain.Trigger{httpOn}); d.exists || d.version != 0 || d.replicas != 0 {
		t.Errorf("deleted: %+v; want nothing", d)
	}
}

func TestBuildRetryDelay(t *testing.T) {
	t.Parallel()
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := buildRetryDelay(i + 1); got != w {
			t.Errorf("buildRetryDelay(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := buildRetryDelay(1000); got != maxBuildRetryDelay {
		t.Errorf("buildRetryDelay(1000) = %s, want the cap", got)
	}
}

func TestBuildErrorMessage(t *testing.T) {
	t.Parallel()
	full := fmt.Errorf("unpack %q: %w", "handler.py", &os.PathError{Op: "write", Path: "/data/local/builds/ns/fn/v2.tmp-1/function/handler.py", Err: syscall.ENOSPC})
	if got := buildErrorMessage(full); got != driver.DiskFullMessage {
		t.Errorf("buildErrorMessage(ENOSPC) = %q, want %q", got, driver.DiskFullMessage)
	}
	if got := buildErrorMessage(domain.Errorf(domain.EUNAVAILABLE, "code store unreachable")); got != "code store unreachable" {
		t.Errorf("buildErrorMessage(domain error) = %q", got)
	}
}

// TestRiversCancelledErrorsAreWarnings: River's errors that only say its
// context was cancelled (the stop's) reach the platform's log as WARN;
// every other error stays an ERROR, and nothing below WARN passes.
func TestRiversCancelledErrorsAreWarnings(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	log := slog.New(minLevel{slog.NewTextHandler(&out, nil), slog.LevelWarn})
	log.Error("Failed to send job insert notification", "err", "notify: context canceled")
	log.Error("notifier: listen", slog.Any("error", fmt.Errorf("wait: %w", context.Canceled)))
	log.Error("Failed to send job insert notification", "err", "connection refused")
	log.Info("started")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"level=WARN", "level=WARN", "level=ERROR"}
	if len(lines) != len(want) {
		t.Fatalf("logged %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d = %q, want %s", i, lines[i], w)
		}
	}
}
