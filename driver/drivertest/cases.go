package drivertest

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
)

// testServe builds a version, checks that building it again changes
// nothing, deploys it, redeploys it (same endpoint, same process), runs it as
// a job, scales it to zero and back.
func testServe(t *testing.T, h Harness, mk func(string) sample) {
	s := mk("v1")
	x := newFn(t, h, "serve")
	w := x.mustBuild(s, config(s, map[string]string{"GREETING": "hi there"}, 0))
	if again := x.rebuild(1); again.Failed || again.Image != w.Image {
		t.Fatalf("building v1 again = %+v, want image %q", again, w.Image)
	}

	endpoint := x.mustDeploy(w)
	a := x.mustGet(endpoint, "/")
	if a.Runtime != sampleRuntimes[s.runtime].word || a.Version != "v1" || a.Greeting != "hi there" {
		t.Fatalf("answer = %+v, want runtime %s, version v1, greeting from the env var", a, sampleRuntimes[s.runtime].word)
	}
	if again := x.mustDeploy(w); again != endpoint {
		t.Fatalf("deploying the running version again moved it from %s to %s", endpoint, again)
	}
	if b := x.mustGet(endpoint, "/"); b.Instance != a.Instance {
		t.Fatalf("deploying the running version again restarted it (instance %d, then %d)", a.Instance, b.Instance)
	}

	res := x.run(w, `{"n": 7}`)
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("job = exit %d timed out %v\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.TimedOut, res.Stdout, res.Stderr)
	}
	if !strings.Contains(res.Stdout, "hello from "+sampleRuntimes[s.runtime].word) {
		t.Errorf("job stdout lacks what the function printed:\n%s", res.Stdout)
	}
	var out answer
	if err := json.Unmarshal([]byte(lastLine(res.Stdout)), &out); err != nil || out.N != float64(7) || out.Greeting != "hi there" {
		t.Fatalf("job result (last stdout line) = %q (%v), want n 7 and the greeting", lastLine(res.Stdout), err)
	}

	if ep, err := x.deploy(w, 0); err != nil || ep != "" {
		t.Fatalf("scale to zero = %q, %v", ep, err)
	}
	x.waitGone(endpoint, "/")
	if b := x.mustGet(x.mustDeploy(w), "/"); b.Version != "v1" {
		t.Fatalf("after scaling up again: %+v", b)
	}
}

func testGoCompileError(t *testing.T, h Harness) {
	s := goCompileErrorSample()
	x := newFn(t, h, "broken")
	_, res := x.build(s, config(s, nil, 0))
	if !res.Failed {
		t.Fatalf("a Go compile error built: %+v", res)
	}
	for _, want := range []string{"undefined", "notDefined"} {
		if !strings.Contains(res.Log, want) || !strings.Contains(res.Message, want) {
			t.Errorf("build log and message must carry the compiler's output (%q):\nmessage: %s\nlog: %s", want, res.Message, res.Log)
		}
	}
}

func testNodeDependency(t *testing.T, h Harness) {
	s := nodeDependencySample()
	x := newFn(t, h, "deps")
	w := x.mustBuild(s, config(s, nil, 0))
	const want = "hello from a local package"
	var got struct{ Greeting string }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.request(ctx, client, x.mustDeploy(w), "/", &got); err != nil || got.Greeting != want {
		t.Fatalf("answer = %+v, %v; want greeting %q", got, err, want)
	}
	res := x.run(w, `{}`)
	if res.ExitCode != 0 || !strings.Contains(lastLine(res.Stdout), want) {
		t.Fatalf("job = exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}

// testRollVersions switches a function from v1 to v2, which has other
// environment variables, and back to v1's build: after each Deploy the
// endpoint it returns answers with that version and its environment only.
func testRollVersions(t *testing.T, h Harness) {
	x := newFn(t, h, "roll")
	s1, s2 := pythonSample("v1"), pythonSample("v2")
	w1 := x.mustBuild(s1, config(s1, map[string]string{"GREETING": "one"}, 0))
	w2 := x.mustBuild(s2, config(s2, map[string]string{"GREETING": "two"}, 0))
	var last answer
	for i, step := range []struct {
		w                 driver.Workload
		version, greeting string
	}{{w1, "v1", "one"}, {w2, "v2", "two"}, {w1, "v1", "one"}} {
		endpoint := x.mustDeploy(step.w)
		for range 5 {
			a := x.mustGet(endpoint, "/")
			if a.Version != step.version || a.Greeting != step.greeting {
				t.Fatalf("step %d: after deploying %s the endpoint answers %+v; want version %s with greeting %q", i, step.version, a, step.version, step.greeting)
			}
			if i > 0 && a.Instance == last.Instance {
				t.Fatalf("step %d: %s answers from the process of the version before (instance %d)", i, step.version, a.Instance)
			}
		}
		last = x.mustGet(endpoint, "/")
	}
}

// testSwitchVersions switches a function from v1 to v2 and back to v1's
// build while four clients send requests back to back, moving to each new
// endpoint as soon as Deploy returns it: no request may fail.
func testSwitchVersions(t *testing.T, h Harness) {
	x := newFn(t, h, "switch")
	s1, s2 := pythonSample("v1"), pythonSample("v2")
	w1 := x.mustBuild(s1, config(s1, nil, 0))
	hm := startHammer(h, x.mustDeploy(w1), 4)
	defer hm.stop()
	if !hm.waitAnswers("v1", 20, 30*time.Second) {
		t.Fatal("v1 does not answer")
	}
	w2 := x.mustBuild(s2, config(s2, nil, 0)) // built under load
	for _, step := range []struct {
		w       driver.Workload
		version string
	}{{w2, "v2"}, {w1, "v1"}} {
		hm.retarget(x.mustDeploy(step.w))
		if !hm.waitAnswers(step.version, 20, 30*time.Second) {
			t.Fatalf("%s does not answer after the switch", step.version)
		}
		time.Sleep(h.Drain + 500*time.Millisecond) // the old version stops meanwhile, under load
	}
	ok, failures, versions := hm.stop()
	t.Logf("%d requests answered during the switches: %v", ok, versions)
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed while switching versions; first: %s", len(failures), ok+len(failures), strings.Join(failures[:min(5, len(failures))], "; "))
	}
}

// testCrashRestart crashes the process with a request: the driver must start
// it again at the same endpoint.
func testCrashRestart(t *testing.T, h Harness) {
	x := newFn(t, h, "crash")
	s := pythonSample("v1")
	w := x.mustBuild(s, config(s, nil, 0))
	endpoint := x.mustDeploy(w)
	before := x.mustGet(endpoint, "/")
	conn := testutil.EndpointClient(10*time.Second, false)
	if err := h.request(context.Background(), conn, endpoint, "/crash", nil); err == nil {
		t.Fatal("a request that exits the process was answered")
	}
	deadline := time.Now().Add(h.DeployTimeout)
	for {
		var a answer
		err := h.request(context.Background(), conn, endpoint, "/", &a)
		if err == nil && a.Instance != before.Instance {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the function was not restarted at %s within %s (last: %+v, %v)", endpoint, h.DeployTimeout, a, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testCrashLoop deploys a version that exits shortly after every start: the
// driver must report the crash loop, refuse to deploy that version again
// with its stderr, and deploy a good version over it.
func testCrashLoop(t *testing.T, h Harness) {
	x := newFn(t, h, "crashloop")
	s := crashLoopSample()
	env := map[string]string{"SAMPLE_CRASH_AFTER_MS": strconv.Itoa(int(h.CrashAfter / time.Millisecond))}
	w := x.mustBuild(s, config(s, env, 0))
	x.mustDeploy(w)
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), h.CrashLoopTimeout)
	defer cancel()
	if err := h.WaitCrashLoop(ctx, x.ns, x.name); err != nil {
		t.Fatalf("no crash loop reported within %s: %v", h.CrashLoopTimeout, err)
	}
	t.Logf("crash loop reported %s after Deploy", time.Since(started).Round(time.Millisecond))
	_, err := x.deploy(w, 1)
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE || !strings.Contains(domain.ErrorMessage(err), "dying on purpose") {
		t.Fatalf("Deploy of the crash-looping version = %v; want EUNPROCESSABLE with its stderr", err)
	}
	good := pythonSample("v2")
	w2 := x.mustBuild(good, config(good, nil, 0))
	if a := x.mustGet(x.mustDeploy(w2), "/"); a.Version != "v2" {
		t.Fatalf("after the crash loop, a good version answers %+v", a)
	}
}

// testLoadFailure builds and deploys a version that raises while loading: a
// driver that loads the entrypoint at build time fails the build with the
// load error; one that does not fails the deploy with it.
func testLoadFailure(t *testing.T, h Harness) {
	x := newFn(t, h, "noload")
	s := loadFailureSample()
	w, res := x.build(s, config(s, nil, 0))
	if res.Failed {
		if !strings.Contains(res.Message, "cannot load: SAMPLE_SETTING is missing") {
			t.Fatalf("failed build of a version that fails to load says %q; want its load error", res.Message)
		}
		return
	}
	_, err := x.deploy(w, 1)
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE || !strings.Contains(domain.ErrorMessage(err), "cannot load: SAMPLE_SETTING is missing") {
		t.Fatalf("Deploy of a version that fails to load = %v; want EUNPROCESSABLE with its stderr", err)
	}
}

func testJobFailure(t *testing.T, h Harness, mk func(string) sample, want string) {
	x := newFn(t, h, "job-fails")
	s := mk("v1")
	w := x.mustBuild(s, config(s, nil, 0))
	res := x.run(w, `{"action": "fail", "n": 5}`)
	if res.ExitCode != 1 || res.TimedOut || !strings.Contains(res.Stderr, want) {
		t.Fatalf("failing job = exit %d timed out %v; want exit 1 with %q in stderr:\n%s", res.ExitCode, res.TimedOut, want, res.Stderr)
	}
	if tb := sampleRuntimes[s.runtime].traceback; tb != "" && !strings.Contains(res.Stderr, tb) {
		t.Errorf("stderr lacks the traceback:\n%s", res.Stderr)
	}
}

func testJobTimeout(t *testing.T, h Harness, mk func(string) sample, action string) {
	x := newFn(t, h, "job-times-out")
	s := mk("v1")
	w := x.mustBuild(s, config(s, nil, 1))
	started := time.Now()
	res := x.run(w, `{"action": "`+action+`"}`)
	took := time.Since(started)
	if res.ExitCode != 124 || !res.TimedOut {
		t.Fatalf("job past timeout_sec 1 = exit %d timed out %v\nstderr:\n%s", res.ExitCode, res.TimedOut, res.Stderr)
	}
	if took > 20*time.Second {
		t.Fatalf("a job with timeout_sec 1 ran %s", took)
	}
	t.Logf("timed out after %s", took.Round(time.Millisecond))
}

// testRemove removes a function with a running server and a running job.
func testRemove(t *testing.T, h Harness) {
	x := newFn(t, h, "remove")
	s := pythonSample("v1")
	w := x.mustBuild(s, config(s, nil, 60))
	endpoint := x.mustDeploy(w)
	x.mustGet(endpoint, "/")
	jobDone := make(chan error, 1)
	go func() {
		_, err := h.Driver.Run(context.Background(), runSpec(w, `{"action": "sleep"}`))
		jobDone <- err
	}()
	time.Sleep(time.Second) // let the job start
	ctx, cancel := context.WithTimeout(context.Background(), h.DeployTimeout)
	defer cancel()
	if err := h.Driver.Remove(ctx, x.ns, x.name); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	select {
	case <-jobDone:
	case <-time.After(30 * time.Second):
		t.Fatal("a job of the removed function still runs")
	}
	x.waitGone(endpoint, "/")
	left, err := h.Leftovers(ctx, x.ns, x.name)
	if err != nil || len(left) > 0 {
		t.Fatalf("left behind after Remove: %v, %v", left, err)
	}
	if err := h.Driver.Remove(ctx, x.ns, x.name); err != nil {
		t.Fatalf("Remove again: %v", err)
	}
	if err := h.Driver.Remove(ctx, x.ns, "never-deployed"); err != nil {
		t.Fatalf("Remove of an unknown function: %v", err)
	}
}

// testScale scales a deployed version out to three instances, which must be
// three processes answering and which a Deploy of the running version
// with one replica keeps, and back in to one, retiring two named ones:
// the third keeps serving, the same process. A driver whose endpoints are
// one per instance (the local driver, Kubernetes with EndpointSlices)
// returns three different ones; a driver behind one load-balanced address
// (a Kubernetes Service) returns it once per instance.
func testScale(t *testing.T, h Harness) {
	s := pythonSample("v1")
	x := newFn(t, h, "scale")
	w := x.mustBuild(s, config(s, nil, 0))
	x.mustDeploy(w)
	eps := x.mustScale(w, 3, nil)
	if len(eps) != 3 || !slices.IsSorted(eps) {
		t.Fatalf("Scale to 3 = %v, want 3 endpoints, sorted", eps)
	}
	if distinct := len(slices.Compact(slices.Clone(eps))); distinct != 1 && distinct != 3 {
		t.Fatalf("Scale to 3 = %v: %d distinct endpoints, want 3 (one per instance) or 1 (one balanced address)", eps, distinct)
	}
	x.mustDeploy(w) // a rollout of the running version stops none of them
	if again := x.mustScale(w, 3, nil); !slices.Equal(again, eps) {
		t.Fatalf("after Deploy with 1 replica, Scale to 3 = %v, want the same instances %v", again, eps)
	}
	perInstance := eps[0] != eps[1]
	if !perInstance {
		t.Logf("the driver serves the instances at one balanced address %s", eps[0])
		if one := x.mustScale(w, 1, nil); len(one) != 1 {
			t.Fatalf("Scale to 1 = %v, want 1 endpoint", one)
		}
		return
	}
	seen := map[int64]string{}
	for _, ep := range eps {
		a := x.mustGet(ep, "/")
		if other, dup := seen[a.Instance]; dup {
			t.Fatalf("%s and %s are served by one process (instance %v)", other, ep, a.Instance)
		}
		seen[a.Instance] = ep
	}
	keep := x.mustGet(eps[1], "/")
	left := x.mustScale(w, 1, []string{eps[0], eps[2]})
	if len(left) != 1 || left[0] != eps[1] {
		t.Fatalf("Scale to 1 retiring %s and %s = %v, want [%s]", eps[0], eps[2], left, eps[1])
	}
	if a := x.mustGet(eps[1], "/"); a.Instance != keep.Instance {
		t.Fatalf("the instance kept was restarted (instance %v, then %v)", keep.Instance, a.Instance)
	}
	x.waitGone(eps[0], "/")
	x.waitGone(eps[2], "/")
	if again, err := x.deploy(w, 1); err != nil || again != eps[1] {
		t.Fatalf("deploying the running version again = %q, %v; want %s", again, err, eps[1])
	}
}
