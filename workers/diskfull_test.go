package workers_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
)

// TestBuildOnAFullDisk: a build the driver cannot run for want of disk
// space says so on the version while it waits (no path of the host), is
// retried within seconds, fails with that message once its attempts are
// spent, and one whose space comes back builds at the next retry.
func TestBuildOnAFullDisk(t *testing.T) {
	t.Parallel()
	h := setup(t)
	var mu sync.Mutex
	calls := map[string][]time.Time{}
	full := func(fn string) error {
		return fmt.Errorf("unpack %q: %w", "handler.py",
			&os.PathError{Op: "write", Path: "/var/lib/sless/local/builds/" + fn + "/v1.tmp-1/function/handler.py", Err: syscall.ENOSPC})
	}
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onBuild = func(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
			mu.Lock()
			calls[b.Function] = append(calls[b.Function], time.Now())
			n := len(calls[b.Function])
			mu.Unlock()
			if (b.Function == "full" && b.Version == 2) || (b.Function == "freed" && n <= 2) {
				return driver.BuildResult{}, full(b.Function)
			}
			return driver.BuildResult{Image: "local/" + b.Function}, nil
		}
	})
	h.start()
	h.readyFunction("full", pySpec)
	h.upload("full", "d2")
	h.createFunction("freed", pySpec)
	h.upload("freed", "d1")

	// While it waits, the version says why.
	h.eventually(10*time.Second, func() error {
		v := h.version("full", 2)
		if v.BuildStatus != domain.BuildStatusBuilding || !strings.Contains(v.BuildLog, driver.DiskFullMessage+"; retrying in ") {
			return errorf("full v2 %s, log %q; want Building, saying the disk is full and it retries", v.BuildStatus, v.BuildLog)
		}
		if strings.Contains(v.BuildLog, "/var/lib") {
			return errorf("full v2's log names a path of the host: %q", v.BuildLog)
		}
		return nil
	})

	// Space again: the next retry, seconds later, builds.
	h.eventually(15*time.Second, func() error {
		if v := h.version("freed", 1); v.BuildStatus != domain.BuildStatusSucceeded {
			return errorf("freed v1 %s", v.BuildStatus)
		}
		return nil
	})

	// Attempts spent: BuildFailed with the readable message; v1 stays active.
	start := time.Now()
	h.eventually(40*time.Second, func() error {
		if v := h.version("full", 2); v.BuildStatus != domain.BuildStatusFailed {
			return errorf("full v2 %s after %s", v.BuildStatus, time.Since(start).Round(time.Second))
		}
		return nil
	})
	v := h.version("full", 2)
	// "the build could not run" begins it: the platform's failure, not the
	// code's, which an upload of the same code should build again.
	if !strings.HasPrefix(v.Message, "the build could not run") || !strings.Contains(v.Message, driver.DiskFullMessage) || strings.Contains(v.Message, "/var/lib") {
		t.Errorf("full v2 message %q; want the build could not run, the disk-full message, no path", v.Message)
	}
	if f := h.function("full"); f.ActiveVersion != 1 || f.Phase != domain.PhaseReady {
		t.Errorf("function full: active v%d, %s; want v1 Ready", f.ActiveVersion, f.Phase)
	}

	// Five attempts, each within about 10 s of the one before.
	mu.Lock()
	defer mu.Unlock()
	at := calls["full"][1:] // the first is v1's
	if len(at) != 5 {
		t.Fatalf("full v2 built %d times, want 5 (BuildArgs' MaxAttempts)", len(at))
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap > 12*time.Second {
			t.Errorf("attempt %d came %s after attempt %d; want seconds", i+1, gap.Round(time.Millisecond), i)
		}
	}
	if total := at[len(at)-1].Sub(at[0]); total > 25*time.Second {
		t.Errorf("five attempts took %s; want under 25 s", total.Round(time.Second))
	}
}
