package drivertest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store/codestore"
)

// Code is where the suite stores sample code and the driver reads it from;
// *codestore.Store implements it.
type Code interface {
	driver.CodeFetcher
	Put(ctx context.Context, ns, fn string, incarnation int, zip []byte, files []codestore.File, baseImage string, steps ...codestore.ImageSteps) (codestore.Object, error)
}

// Harness is what a driver's test gives Run.
type Harness struct {
	// Driver is the driver under test. Cases use it in parallel; the suite
	// does not close it.
	Driver driver.Driver
	// Code stores the sample code; the suite passes it to Build as BuildSpec.Code.
	Code Code
	// BaseImage names the base image of a runtime for the build context;
	// nil means "sless/<runtime>".
	BaseImage func(domain.Runtime) string
	// WaitCrashLoop returns nil once the driver reported that the function
	// crash-loops (its Reports.Crashed, from Watch; FailureRecorder.Wait
	// fits), or ctx's error.
	WaitCrashLoop func(ctx context.Context, namespace, function string) error
	// Leftovers lists what of a function is still on the platform after
	// Remove (processes, files, objects); the suite expects nothing.
	Leftovers func(ctx context.Context, namespace, function string) ([]string, error)
	// URL turns an endpoint from Deploy into a URL this test process can
	// reach; nil uses testutil.EndpointURL (http(s) endpoints as they are,
	// Unix sockets through the suite's clients).
	URL func(endpoint string) string
	// Skip names the cases (as Run names its subtests, e.g.
	// "SwitchVersions/under-load") that cannot run against the driver, each
	// with the reason; Run skips them with it and fails on a name that is no
	// case. Both drivers pass every case: it is empty for them.
	Skip map[string]string

	// BuildTimeout bounds one build (default 5 min).
	BuildTimeout time.Duration
	// DeployTimeout bounds one Deploy and the wait for an endpoint to stop
	// answering after scale to zero (default 2 min).
	DeployTimeout time.Duration
	// CrashLoopTimeout bounds the wait for a crash loop report (default 2 min).
	CrashLoopTimeout time.Duration
	// CrashAfter is how long the crash-looping sample stays up after it
	// loaded (default 1 s): long enough for Deploy to see it healthy on a busy machine.
	CrashAfter time.Duration
	// Drain is the driver's drain time after a version switch; the suite
	// keeps hammering the old endpoint's successor at least this long (default 1 s).
	Drain time.Duration
}

func (h Harness) withDefaults() Harness {
	if h.BaseImage == nil {
		h.BaseImage = func(rt domain.Runtime) string { return "sless/" + string(rt) }
	}
	if h.URL == nil {
		h.URL = testutil.EndpointURL
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&h.BuildTimeout, 5*time.Minute)
	def(&h.DeployTimeout, 2*time.Minute)
	def(&h.CrashLoopTimeout, 2*time.Minute)
	def(&h.CrashAfter, time.Second)
	def(&h.Drain, time.Second)
	return h
}

// Run runs every case of the suite against the harness's driver, each as a
// parallel subtest in a namespace of its own.
func Run(t *testing.T, h Harness) {
	if h.Driver == nil || h.Code == nil || h.WaitCrashLoop == nil || h.Leftovers == nil {
		t.Fatal("drivertest: Harness needs Driver, Code, WaitCrashLoop and Leftovers")
	}
	h = h.withDefaults()
	for name, reason := range h.Skip {
		if !slices.Contains(caseNames(), name) || reason == "" {
			t.Fatalf("drivertest: Harness.Skip[%q] = %q: it must name a case (one of %v) and say why", name, reason, caseNames())
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if reason := h.Skip[c.name]; reason != "" {
				t.Skip(reason)
			}
			c.run(t, h)
		})
	}
}

// caseNames lists the names of the suite's cases, for Harness.Skip.
func caseNames() []string {
	names := make([]string, 0, len(cases))
	for _, c := range cases {
		names = append(names, c.name)
	}
	return names
}

// cases are the suite's cases, each run as a subtest of its name.
var cases = []struct {
	name string
	run  func(*testing.T, Harness)
}{
	{"Serve/python", func(t *testing.T, h Harness) { testServe(t, h, pythonSample) }},
	{"Serve/nodejs", func(t *testing.T, h Harness) { testServe(t, h, nodeSample) }},
	{"Serve/go", func(t *testing.T, h Harness) { testServe(t, h, goSample) }},
	{"BuildFailure/go-compile-error", testGoCompileError},
	{"NodeDependency", testNodeDependency},
	{"SwitchVersions/rolling", testRollVersions},
	{"SwitchVersions/under-load", testSwitchVersions},
	{"Scale", testScale},
	{"CrashRestart", testCrashRestart},
	{"CrashLoop", testCrashLoop},
	{"LoadFailure", testLoadFailure},
	{"Jobs/failure/python", func(t *testing.T, h Harness) { testJobFailure(t, h, pythonSample, "ValueError: bad input: 5") }},
	{"Jobs/failure/go", func(t *testing.T, h Harness) { testJobFailure(t, h, goSample, "bad input: 5") }},
	{"Jobs/timeout/python", func(t *testing.T, h Harness) { testJobTimeout(t, h, pythonSample, "sleep") }},
	{"Jobs/timeout/nodejs-busy-loop", func(t *testing.T, h Harness) { testJobTimeout(t, h, nodeSample, "spin") }},
	{"Remove", testRemove},
	{"Secrets", testSecrets},
}
