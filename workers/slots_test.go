package workers_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/workers"
)

// buildGateForTest is a driver Build for the scheduling tests, a test double:
// the builds of functions named "slow-*" block until the gate opens (the
// long builds of a busy tenant), the others return at once; it counts how
// many builds of each namespace are inside Build at the same time.
type buildGateForTest struct {
	mu      sync.Mutex
	running map[string]int // namespace → builds in Build now
	peak    map[string]int // namespace → most at once
	gate    chan struct{}
	once    sync.Once
}

func newBuildGate() *buildGateForTest {
	return &buildGateForTest{running: map[string]int{}, peak: map[string]int{}, gate: make(chan struct{})}
}

func (g *buildGateForTest) build(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
	g.mu.Lock()
	g.running[b.Namespace]++
	g.peak[b.Namespace] = max(g.peak[b.Namespace], g.running[b.Namespace])
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.running[b.Namespace]--
		g.mu.Unlock()
	}()
	if strings.HasPrefix(b.Function, "slow-") {
		if err := blockUntil(ctx, g.gate); err != nil {
			return driver.BuildResult{}, err
		}
	}
	return driver.BuildResult{Image: fmt.Sprintf("local/%s:v%d", b.Function, b.Version)}, nil
}

// open lets every blocked build, and all later ones, finish.
func (g *buildGateForTest) open() { g.once.Do(func() { close(g.gate) }) }

// counts returns how many builds of ns run now and the most that ran at once.
func (g *buildGateForTest) counts(ns string) (now, peak int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running[ns], g.peak[ns]
}

// inNamespace is the harness acting as another tenant: the same database,
// workers and driver, its functions in namespace ns.
func (h *harness) inNamespace(ns string) *harness {
	other := *h
	other.ns = ns
	return &other
}

// snoozedBuilds counts the build jobs of the harness's namespace that River
// snoozed at least once: they found no free slot and gave their worker back.
func (h *harness) snoozedBuilds() int {
	h.t.Helper()
	return h.count(`SELECT count(*) FROM river_job WHERE kind = 'build' AND args->>'namespace' = $1
		AND coalesce((metadata->>'snoozes')::int, 0) > 0`, h.ns)
}

// busyTenant queues n long builds in a new namespace and waits until want
// of them build.
func (h *harness) busyTenant(gate *buildGateForTest, n, want int) *harness {
	h.t.Helper()
	b := h.inNamespace(testutil.UniqueNS(h.t))
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("slow-%d", i)
		b.createFunction(name, pySpec)
		b.upload(name, "d1")
	}
	b.eventually(10*time.Second, func() error {
		if now, _ := gate.counts(b.ns); now < want {
			return errorf("%d builds of the busy tenant run, want %d", now, want)
		}
		return nil
	})
	return b
}

// waitingBuilds waits until the other builds of the busy tenant have tried
// to start and given their worker back (River snoozed them) while want of
// its builds run, and fails unless no more than want ever ran at once.
func (h *harness) waitingBuilds(gate *buildGateForTest, n, want int) {
	h.t.Helper()
	h.eventually(10*time.Second, func() error {
		if s := h.snoozedBuilds(); s < n-want {
			return errorf("%d builds of the busy tenant waited for a slot, want %d", s, n-want)
		}
		return nil
	})
	if now, peak := gate.counts(h.ns); now != want || peak != want {
		h.t.Fatalf("%d builds of the busy tenant run, at most %d at once; want %d", now, peak, want)
	}
}

// quickBuildFinishes uploads a quick build for the harness's tenant and
// requires it to finish within a few seconds.
func (h *harness) quickBuildFinishes() {
	h.t.Helper()
	start := time.Now()
	h.createFunction("quick", pySpec)
	h.upload("quick", "d1")
	h.eventually(5*time.Second, func() error {
		if v := h.version("quick", 1); v.BuildStatus != domain.BuildStatusSucceeded {
			return errorf("the quick build is %s after %v", v.BuildStatus, time.Since(start).Round(time.Millisecond))
		}
		return nil
	})
	h.t.Logf("the quick build of another tenant finished %v after its upload", time.Since(start).Round(time.Millisecond))
}

// allBuilt waits for version 1 of every function to be built.
func (h *harness) allBuilt(names ...string) {
	h.t.Helper()
	h.eventually(20*time.Second, func() error {
		for _, name := range names {
			if v := h.version(name, 1); v.BuildStatus != domain.BuildStatusSucceeded {
				return errorf("%s v1 is %s", name, v.BuildStatus)
			}
		}
		return nil
	})
}

// TestBuildsOfOneTenantDoNotHoldBackAnother is the probe's case: tenant B
// queues three long builds, tenant A one quick build. B builds at most
// BuildsPerNamespace at a time, its other builds give their worker back
// without using up an attempt, and A's build finishes within seconds
// instead of after B's.
func TestBuildsOfOneTenantDoNotHoldBackAnother(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ workers, perNamespace int }{
		{workers: 2, perNamespace: 1}, // the probe's case
		{workers: 3, perNamespace: 2}, // two of three run at once, the third waits
	} {
		t.Run(fmt.Sprintf("%d workers, %d per namespace", tc.workers, tc.perNamespace), func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			gate := newBuildGate()
			h.driver.setHooks(func(d *scriptedDriverForWorkerTests) { d.onBuild = gate.build })
			h.start(func(c *workers.Config) { c.BuildWorkers, c.BuildsPerNamespace = tc.workers, tc.perNamespace })
			t.Cleanup(gate.open) // before the workers stop

			b := h.busyTenant(gate, 3, tc.perNamespace)
			h.quickBuildFinishes()
			b.waitingBuilds(gate, 3, tc.perNamespace)
			gate.open()
			b.allBuilt("slow-1", "slow-2", "slow-3")
			if _, peak := gate.counts(b.ns); peak != tc.perNamespace {
				t.Fatalf("%d builds of the busy tenant ran at once, want %d", peak, tc.perNamespace)
			}
			for _, name := range []string{"slow-1", "slow-2", "slow-3"} { // some of them waited
				if _, attempt := b.jobAttempts("build", "function", name); attempt != 1 {
					t.Errorf("the build of %s completed on attempt %d; waiting for a slot must use up no attempt", name, attempt)
				}
			}
		})
	}
}

// TestBuildSlotsHoldAcrossReplicas: two control planes on one database,
// one build worker each. The busy tenant's limit holds for both together,
// so one of the two workers stays free for the other tenant.
func TestBuildSlotsHoldAcrossReplicas(t *testing.T) {
	t.Parallel()
	h := setup(t)
	gate := newBuildGate()
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) { d.onBuild = gate.build })
	for range 2 {
		h.start(func(c *workers.Config) { c.BuildWorkers, c.BuildsPerNamespace = 1, 1 })
	}
	t.Cleanup(gate.open)

	b := h.busyTenant(gate, 2, 1)
	h.quickBuildFinishes()
	b.waitingBuilds(gate, 2, 1)
	gate.open()
	b.allBuilt("slow-1", "slow-2")
	if _, peak := gate.counts(b.ns); peak != 1 {
		t.Fatalf("%d builds of the busy tenant ran at once on two replicas, want 1", peak)
	}
}

// TestBuildSlotIsReleasedHoweverTheBuildEnds: in one namespace with one
// slot, a build whose driver panics (River retries it) and one the driver
// fails: each gives the slot back, so the other, and the retry, get it.
func TestBuildSlotIsReleasedHoweverTheBuildEnds(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onBuild = func(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
			switch {
			case b.Function == "panics" && d.buildCalls(b.Function, b.Version) == 1:
				panic("the driver panics")
			case b.Function == "fails":
				return driver.BuildResult{}, domain.Errorf(domain.EINVALID, "image name too long")
			}
			return driver.BuildResult{Image: "local/" + b.Function}, nil
		}
	})
	h.start(func(c *workers.Config) { c.BuildWorkers, c.BuildsPerNamespace = 2, 1 })
	for _, name := range []string{"panics", "fails"} {
		h.createFunction(name, pySpec)
		h.upload(name, "d1")
	}
	h.eventually(20*time.Second, func() error {
		for name, want := range map[string]domain.BuildStatus{"panics": domain.BuildStatusSucceeded, "fails": domain.BuildStatusFailed} {
			if v := h.version(name, 1); v.BuildStatus != want {
				return errorf("%s v1 is %s, want %s", name, v.BuildStatus, want)
			}
		}
		return nil
	})
	if n := h.driver.buildCalls("panics", 1); n != 2 {
		t.Errorf("the panicking build ran %d times, want 2", n)
	}
}
