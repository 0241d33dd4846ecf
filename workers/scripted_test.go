package workers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/slessio/sless/driver"
)

// scriptedDriverForWorkerTests is a test double of driver.Driver for failure
// injection: it records every call and its state (what runs, what is
// scheduled), and tests script its answers with the hooks. Runs follow their
// event: {"stdout": "...", "stderr": "...", "exit": N, "timed_out": true}.
type scriptedDriverForWorkerTests struct {
	mu        sync.Mutex
	builds    map[string]int               // "fn/vN" → Build calls
	deploys   []driver.Deployment          // every Deploy call, in order
	running   map[string]driver.Deployment // fn → what runs (Replicas > 0)
	runs      []driver.RunSpec             // every Run call
	removed   []string                     // Remove calls, "ns/fn"
	schedules map[string]driver.CronSpec   // trigger → applied schedule
	unsched   []string                     // RemoveSchedule calls, trigger names
	onBuild   func(context.Context, driver.BuildSpec) (driver.BuildResult, error)
	onDeploy  func(context.Context, driver.Deployment) (string, error)
	onRun     func(context.Context, driver.RunSpec) (driver.RunResult, error)
	onRemove  func(ctx context.Context, namespace, function string) error // before the removal
}

var _ driver.Driver = (*scriptedDriverForWorkerTests)(nil)

func newScriptedDriver() *scriptedDriverForWorkerTests {
	return &scriptedDriverForWorkerTests{builds: map[string]int{}, running: map[string]driver.Deployment{},
		schedules: map[string]driver.CronSpec{}}
}

func (d *scriptedDriverForWorkerTests) Build(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
	d.mu.Lock()
	d.builds[fmt.Sprintf("%s/v%d", b.Function, b.Version)]++
	hook := d.onBuild
	d.mu.Unlock()
	if hook != nil {
		return hook(ctx, b)
	}
	return driver.BuildResult{Image: fmt.Sprintf("local/%s:v%d", b.Function, b.Version), Log: "built " + b.Digest}, nil
}

// Watch reports nothing: the scripted driver's versions never crash by themselves.
func (d *scriptedDriverForWorkerTests) Watch(ctx context.Context, _ driver.Reports) { <-ctx.Done() }

// Scale is Deploy, with the one endpoint once per replica.
func (d *scriptedDriverForWorkerTests) Scale(ctx context.Context, dep driver.Deployment) ([]string, error) {
	ep, err := d.Deploy(ctx, dep)
	if err != nil || ep == "" {
		return nil, err
	}
	eps := make([]string, dep.Replicas)
	for i := range eps {
		eps[i] = ep
	}
	return eps, nil
}

func (d *scriptedDriverForWorkerTests) Deploy(ctx context.Context, dep driver.Deployment) (string, error) {
	d.mu.Lock()
	hook := d.onDeploy
	d.mu.Unlock()
	endpoint := ""
	if dep.Replicas > 0 {
		endpoint = fmt.Sprintf("http://%s-v%d.test", dep.Function, dep.Version)
	}
	if hook != nil {
		ep, err := hook(ctx, dep)
		if err != nil {
			return "", err
		}
		if ep != "" {
			endpoint = ep
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deploys = append(d.deploys, dep)
	if dep.Replicas > 0 {
		d.running[dep.Function] = dep
	} else {
		delete(d.running, dep.Function)
	}
	return endpoint, nil
}

// scriptedRun is what a run's event asks the driver to answer.
type scriptedRun struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Exit     int    `json:"exit"`
	TimedOut bool   `json:"timed_out"`
}

func (d *scriptedDriverForWorkerTests) Run(ctx context.Context, r driver.RunSpec) (driver.RunResult, error) {
	d.mu.Lock()
	d.runs = append(d.runs, r)
	hook := d.onRun
	d.mu.Unlock()
	if hook != nil {
		return hook(ctx, r)
	}
	var s scriptedRun
	if err := json.Unmarshal(r.Event, &s); err != nil {
		return driver.RunResult{}, err
	}
	exit := s.Exit
	if s.TimedOut {
		exit = 124
	}
	return driver.RunResult{ExitCode: exit, Stdout: s.Stdout, Stderr: s.Stderr, TimedOut: s.TimedOut}, nil
}

func (d *scriptedDriverForWorkerTests) Remove(ctx context.Context, namespace, function string) error {
	d.mu.Lock()
	hook := d.onRemove
	d.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, namespace, function); err != nil {
			return err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.removed = append(d.removed, namespace+"/"+function)
	delete(d.running, function)
	return nil
}

func (d *scriptedDriverForWorkerTests) setHooks(fn func(d *scriptedDriverForWorkerTests)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fn(d)
}

func (d *scriptedDriverForWorkerTests) buildCalls(function string, version int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.builds[fmt.Sprintf("%s/v%d", function, version)]
}

// runningOf returns what runs for a function, if anything.
func (d *scriptedDriverForWorkerTests) runningOf(function string) (driver.Deployment, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dep, ok := d.running[function]
	return dep, ok
}

func (d *scriptedDriverForWorkerTests) deployCalls(function string) []driver.Deployment {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []driver.Deployment
	for _, dep := range d.deploys {
		if dep.Function == function {
			out = append(out, dep)
		}
	}
	return out
}

// runsNamed returns the runs match accepts.
func (d *scriptedDriverForWorkerTests) runsNamed(match func(driver.RunSpec) bool) []driver.RunSpec {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []driver.RunSpec
	for _, r := range d.runs {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

func (d *scriptedDriverForWorkerTests) removals() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.removed...)
}

// schedulingDriverForWorkerTests is the scripted driver plus a Scheduler, as
// k8sdriver has: it runs cron triggers itself.
type schedulingDriverForWorkerTests struct {
	*scriptedDriverForWorkerTests
	failApply error
}

var _ driver.Scheduler = (*schedulingDriverForWorkerTests)(nil)

func (d *schedulingDriverForWorkerTests) ApplySchedule(ctx context.Context, s driver.CronSpec) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failApply != nil {
		return d.failApply
	}
	d.schedules[s.Trigger] = s
	return nil
}

func (d *schedulingDriverForWorkerTests) RemoveSchedule(ctx context.Context, namespace, trigger string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unsched = append(d.unsched, trigger)
	delete(d.schedules, trigger)
	return nil
}

func (d *schedulingDriverForWorkerTests) schedule(trigger string) (driver.CronSpec, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.schedules[trigger]
	return s, ok
}

// blockUntil waits for ch or ctx; it returns ctx's error when ctx ends first.
func blockUntil(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
