package localdriver

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/localdriver/sandbox"
)

var _ driver.Driver = (*Driver)(nil)

// Defaults of Options.
const (
	DefaultDrain             = 10 * time.Second
	DefaultStopGrace         = 5 * time.Second
	DefaultStartTimeout      = time.Minute
	DefaultRestartBackoff    = 250 * time.Millisecond
	DefaultMaxRestartBackoff = 30 * time.Second
	DefaultCrashLoopRestarts = 5
	DefaultCrashLoopWindow   = 2 * time.Minute
)

// Options configures a Driver. Zero durations and counts take the defaults above.
type Options struct {
	// Dir is the data directory; builds go to Dir/builds/<ns>/<fn>/v<N>/. Required.
	Dir string
	// Sandbox runs every process of user code (servers, jobs, build steps).
	// nil makes a bubblewrap sandbox keeping its state in Dir/sandbox, and New
	// fails when none can be made here; pass one made with
	// sandbox.Options{Insecure: true} to run unsandboxed.
	Sandbox *sandbox.Sandbox
	// Source finds the stored code of a version this driver is asked to
	// run but has no build of (another control plane built it): Deploy and
	// Run build it here first. Nil until UseBuildSource sets one (New of
	// the workers does); without one such a version is EUNPROCESSABLE.
	Source driver.BuildSource
	// Logger receives lifecycle events and the output a function process
	// prints outside of requests; nil means slog.Default().
	Logger *slog.Logger

	// Drain is how long the previous version keeps running after Deploy
	// switched a function to a new one, so that requests the proxy already
	// sent it can finish and the proxy can learn the new endpoint (10 s).
	Drain time.Duration
	// StopGrace is the time between SIGTERM and SIGKILL when a process is
	// stopped (5 s).
	StopGrace time.Duration
	// StartTimeout bounds how long Deploy waits for /_sless/health (1 min).
	StartTimeout time.Duration
	// BuildStepTimeout bounds each build step, a compile or a dependency
	// install (runtimes.DefaultStepTimeout); MaxDepsBytes bounds the
	// dependencies one installs (runtimes.DefaultMaxDepsBytes).
	BuildStepTimeout time.Duration
	MaxDepsBytes     int64
	// RestartBackoff is the delay before the first restart after a crash; it
	// doubles with each further crash up to MaxRestartBackoff (250 ms, 30 s).
	RestartBackoff    time.Duration
	MaxRestartBackoff time.Duration
	// CrashLoopRestarts crashes within CrashLoopWindow make a crash loop: the
	// process is not restarted again and Reports.Crashed is called (5 in 2 min).
	CrashLoopRestarts int
	CrashLoopWindow   time.Duration
	// WarmPool is how many processes of each runtime with a pool mode
	// (python3.11, nodejs20) the driver keeps started, sandboxed and
	// waiting before any function needs one (0: none, the default here;
	// sless takes SLESS_WARM_POOL). A cold start of a function takes one
	// instead of starting an interpreter, and a new one takes its place in
	// the background; a process that served a function never serves
	// another. See the package doc.
	WarmPool int
}

func (o Options) withDefaults() Options {
	dur := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	dur(&o.Drain, DefaultDrain)
	dur(&o.StopGrace, DefaultStopGrace)
	dur(&o.StartTimeout, DefaultStartTimeout)
	dur(&o.RestartBackoff, DefaultRestartBackoff)
	dur(&o.MaxRestartBackoff, DefaultMaxRestartBackoff)
	dur(&o.CrashLoopWindow, DefaultCrashLoopWindow)
	if o.CrashLoopRestarts <= 0 {
		o.CrashLoopRestarts = DefaultCrashLoopRestarts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Driver builds and runs functions as processes on this machine. It is safe
// for concurrent use; calls about one function are serialized.
type Driver struct {
	opts    Options
	builds  string // Dir/builds
	sb      *sandbox.Sandbox
	ownSB   bool // made by New: closed by Close
	sockets *socketDir

	closing chan struct{} // closed by Close: waits for health end at once

	mu        sync.Mutex
	closed    bool
	functions map[fnKey]*function
	endpoints map[string]*instance // of started instances, until stopped
	jobs      map[*job]struct{}
	buildLock map[string]*sync.Mutex // per build directory
	source    driver.BuildSource     // where missing builds come from (pull.go); may be nil
	secrets   driver.SecretOpener    // opens the secrets of processes (secret.go); may be nil
	reports   driver.Reports         // set by Watch while it runs

	pool *warmPool // nil without Options.WarmPool
}

// Watch implements driver.Driver: crash loops are reported while it runs.
// Every process of the driver is its own child, so there is nothing to poll:
// the supervisor of an instance reports its crash loop when it gives up.
func (d *Driver) Watch(ctx context.Context, r driver.Reports) {
	d.mu.Lock()
	d.reports = r
	d.mu.Unlock()
	<-ctx.Done()
	d.mu.Lock()
	d.reports = driver.Reports{}
	d.mu.Unlock()
}

// crashed reports a crash loop to Watch's caller, if any.
func (d *Driver) crashed(namespace, function string) {
	d.mu.Lock()
	report := d.reports.Crashed
	d.mu.Unlock()
	if report != nil {
		report(namespace, function)
	}
}

// fnKey names a function across namespaces.
type fnKey struct{ ns, fn string }

func (k fnKey) String() string { return k.ns + "/" + k.fn }

// New returns a Driver keeping its builds under opts.Dir, which it creates
// (0700: it holds every tenant's code). It returns EINVALID without a Dir and
// EUNAVAILABLE when Dir cannot be made or, without Options.Sandbox, when no
// sandbox can be made here.
func New(opts Options) (*Driver, error) {
	if opts.Dir == "" {
		return nil, domain.Errorf(domain.EINVALID, "localdriver: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, domain.Errorf(domain.EINVALID, "localdriver: data dir %q: %v", opts.Dir, err)
	}
	opts.Dir = dir
	builds := filepath.Join(dir, "builds")
	if err := os.MkdirAll(builds, 0o700); err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "localdriver: create %s: %v", builds, err)
	}
	if err := os.Chmod(builds, 0o700); err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "localdriver: %v", err)
	}
	sockets, err := newSocketDir(dir)
	if err != nil {
		return nil, err
	}
	sb, own := opts.Sandbox, false
	if sb == nil {
		if sb, err = sandbox.New(sandbox.Options{Dir: filepath.Join(dir, "sandbox")}); err != nil {
			sockets.close()
			return nil, err
		}
		own = true
	}
	ensureGoCache(dir)
	d := &Driver{
		opts:      opts.withDefaults(),
		builds:    builds,
		sb:        sb,
		ownSB:     own,
		sockets:   sockets,
		closing:   make(chan struct{}),
		functions: map[fnKey]*function{},
		endpoints: map[string]*instance{},
		jobs:      map[*job]struct{}{},
		buildLock: map[string]*sync.Mutex{},
		source:    opts.Source,
	}
	if opts.WarmPool > 0 {
		if d.pool, err = newWarmPool(d, opts.WarmPool); err != nil {
			sockets.close()
			if own {
				_ = sb.Close()
			}
			return nil, err
		}
	}
	return d, nil
}

// ensureGoCache gives go build a cache when the environment names none (a
// service without HOME): go would refuse to build and the failure would read
// as the user's. Otherwise builds share the machine's default cache.
func ensureGoCache(dir string) {
	if os.Getenv("GOCACHE") != "" || os.Getenv("HOME") != "" || os.Getenv("XDG_CACHE_HOME") != "" {
		return
	}
	_ = os.Setenv("GOCACHE", filepath.Join(dir, "go-build-cache"))
}

// Sandbox returns how the driver isolates function processes.
func (d *Driver) Sandbox() *sandbox.Sandbox { return d.sb }

// Close stops every function process (SIGTERM to its process group, SIGKILL
// after StopGrace) and kills running jobs, then refuses further calls with
// EUNAVAILABLE. When ctx ends first, everything is killed at once and ctx's
// error is returned.
func (d *Driver) Close(ctx context.Context) error {
	d.mu.Lock()
	if !d.closed {
		close(d.closing)
	}
	d.closed = true
	fns := make([]*function, 0, len(d.functions))
	for _, f := range d.functions {
		fns = append(fns, f)
	}
	d.mu.Unlock()

	var wg sync.WaitGroup
	for _, j := range d.runningJobs(fnKey{}) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.kill(errClosed)
		}()
	}
	for _, f := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.stopAll(ctx)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		<-done // stopAll escalates to SIGKILL when ctx ends, so this is short
		err = ctx.Err()
	}
	d.pool.close()
	d.sockets.close()
	if d.ownSB {
		_ = d.sb.Close()
	}
	return err
}

// runningJobs returns the running jobs of k, or all of them for the zero key.
func (d *Driver) runningJobs(k fnKey) []*job {
	d.mu.Lock()
	defer d.mu.Unlock()
	var jobs []*job
	for j := range d.jobs {
		if k == (fnKey{}) || j.key == k {
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// register makes a started instance known by its endpoint; unregister forgets it.
func (d *Driver) register(in *instance) {
	d.mu.Lock()
	d.endpoints[in.endpoint] = in
	d.mu.Unlock()
}

func (d *Driver) unregister(in *instance) {
	d.mu.Lock()
	if d.endpoints[in.endpoint] == in {
		delete(d.endpoints, in.endpoint)
	}
	d.mu.Unlock()
}

// ExitReason waits, until ctx ends, for the process serving endpoint to
// have ended, and says how: "out of memory (128 MiB)" when the kernel killed
// it at the function's memory limit, "signal: killed", "exit status 1". It
// returns "" for a process still running, or an endpoint it does not know.
func (d *Driver) ExitReason(ctx context.Context, endpoint string) string {
	d.mu.Lock()
	in := d.endpoints[endpoint]
	d.mu.Unlock()
	if in == nil {
		return ""
	}
	return in.exitReason(ctx)
}

var errClosed = domain.Errorf(domain.EUNAVAILABLE, "the local driver is shut down")

// function returns the state of a function, creating it; EUNAVAILABLE after Close.
func (d *Driver) function(k fnKey) (*function, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errClosed
	}
	f := d.functions[k]
	if f == nil {
		f = &function{key: k, d: d}
		d.functions[k] = f
	}
	return f, nil
}

// lockBuild serializes builds of one directory and returns the unlock.
func (d *Driver) lockBuild(dir string) func() {
	d.mu.Lock()
	m := d.buildLock[dir]
	if m == nil {
		m = &sync.Mutex{}
		d.buildLock[dir] = m
	}
	d.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// functionDir is Dir/builds/<ns>/<fn>.
func (d *Driver) functionDir(k fnKey) string { return filepath.Join(d.builds, k.ns, k.fn) }

// versionDir is the build directory of a version.
func (d *Driver) versionDir(k fnKey, version int) string {
	return filepath.Join(d.functionDir(k), "v"+strconv.Itoa(version))
}

// imagePrefix starts every image name this driver hands out.
const imagePrefix = "local:"

// imageName names the build of version of a function: "local:<ns>/<fn>/v<N>".
func imageName(k fnKey, version int) string {
	return imagePrefix + k.ns + "/" + k.fn + "/v" + strconv.Itoa(version)
}

// checkKey validates a namespace and function name, which become path
// elements; EINVALID when they are not DNS labels.
func checkKey(ns, fn string) (fnKey, error) {
	if err := domain.ValidateNamespace(ns); err != nil {
		return fnKey{}, err
	}
	if err := domain.ValidateName("function", fn); err != nil {
		return fnKey{}, err
	}
	return fnKey{ns, fn}, nil
}

// buildDir resolves the image of a workload to its build directory. The image
// may be an older version's build (a configuration change reuses it) but must
// belong to the same function; EINVALID otherwise, a *missingBuild when the
// build is not on disk (runnableDir builds it), EINTERNAL when its manifest
// cannot be read. No message names a path of the host.
func (d *Driver) buildDir(w driver.Workload) (fnKey, string, error) {
	k, err := checkKey(w.Namespace, w.Function)
	if err != nil {
		return fnKey{}, "", err
	}
	image := w.Image
	if image == "" {
		image = imageName(k, w.Version)
	}
	rest, ok := strings.CutPrefix(image, imagePrefix+k.ns+"/"+k.fn+"/v")
	n, err := strconv.Atoi(rest)
	if !ok || err != nil || n <= 0 || strconv.Itoa(n) != rest {
		return fnKey{}, "", domain.Errorf(domain.EINVALID, "image %q is not a local build of %s", image, k)
	}
	dir := d.versionDir(k, n)
	if _, err := readManifest(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fnKey{}, "", &missingBuild{k: k, n: n}
		}
		return fnKey{}, "", d.hostError("read the build of version "+rest, err)
	}
	return k, dir, nil
}
