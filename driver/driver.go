package driver

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"time"

	"github.com/slessio/sless/domain"
)

// Driver is what the workers need from the platform that runs functions:
// localdriver (processes on this machine) and k8sdriver (Kubernetes) implement
// it, and driver/drivertest is the conformance suite both must pass.
// Every method is idempotent: River may deliver a job twice.
type Driver interface {
	// Build turns the stored code of a version into something runnable (an
	// image, or a local directory with the wrapper and binary). A failure of
	// the user's code (compile error, bad dependency) is a result with
	// Failed set and the tool output in Log, not an error; errors are for the
	// platform (EUNAVAILABLE and such) and make the worker retry.
	Build(ctx context.Context, b BuildSpec) (BuildResult, error)

	// Deploy converges the HTTP workload of a function: with Replicas > 0 the
	// given version runs (replacing another version without dropping requests)
	// and Deploy returns the endpoint the proxy should use once it is healthy;
	// with Replicas 0 it is stopped (scale to zero) and the endpoint is "".
	// A version that cannot start (exits at load, crash loop) is
	// EUNPROCESSABLE with the last lines of its stderr in the message.
	Deploy(ctx context.Context, d Deployment) (endpoint string, err error)

	// Scale converges the function's HTTP workload to d.Replicas instances
	// of d's version, as Deploy does, and returns the endpoint of each
	// ready instance, one per instance, sorted (the invoke proxy sends each
	// request to the least loaded). Instances that are starting or
	// stopping are not returned. Scaling down stops the instances d.Retire
	// names first (the proxy drained them: nothing is in flight there),
	// then any. Errors are Deploy's.
	Scale(ctx context.Context, d Deployment) (endpoints []string, err error)

	// Run runs a version once in job mode with an input event and returns its
	// output. The user's failure (non-zero exit, timeout) is a result, not an error.
	Run(ctx context.Context, r RunSpec) (RunResult, error)

	// Remove deletes every workload, schedule and build artifact of a function.
	// Removing what does not exist is not an error.
	Remove(ctx context.Context, namespace, function string) error

	// Watch reports what the driver sees happen without a call of the
	// platform's, until ctx ends; it returns then. The wiring calls it once,
	// right after making the driver; what happens before is not reported.
	Watch(ctx context.Context, r Reports)
}

// Reports are the callbacks of Watch; a nil one is not called. They are
// called from the driver's own goroutines and must not block for long.
type Reports struct {
	// Crashed: the running version of a function crash-loops after a
	// successful Deploy (the local driver: CrashLoopRestarts exits in its
	// window; Kubernetes: a serving pod's container restarted that often).
	// The platform rolls the function out again, and that Deploy fails
	// with EUNPROCESSABLE, which records the failure on the version.
	Crashed func(namespace, function string)
	// CronRan: a run of a schedule that a Scheduler driver runs itself
	// finished; the platform records it in the invocation log. Each run is
	// reported once, also with several control planes watching.
	CronRan func(CronRun)
}

// Scheduler is implemented by drivers that run cron triggers themselves
// (k8sdriver: a CronJob per trigger). For drivers without it, the workers'
// leader-only cron enqueuer fires due slots through Driver.Run. A Scheduler
// driver reports each finished run of a schedule as a CronRun, which the
// wiring hands to Workers.RecordCronRun for the invocation log.
type Scheduler interface {
	// ApplySchedule creates or updates the schedule of a cron trigger; a
	// disabled one is kept but suspended.
	ApplySchedule(ctx context.Context, s CronSpec) error
	// RemoveSchedule deletes the schedule of a cron trigger, if any.
	RemoveSchedule(ctx context.Context, namespace, trigger string) error
}

// BuildSource finds what building a version again takes: a driver that
// keeps builds per server (the local driver: each control plane has its own
// data dir) builds a version it is asked to run but lacks, as a node pulls
// an image it does not have. Workers implements it.
type BuildSource interface {
	// BuildSpec returns the spec of version of a function as its build had
	// it, with Code serving the stored code checked as a build checks it.
	// Errors: ENOTFOUND (no such function or version), EUNPROCESSABLE (the
	// version did not build, or its stored code changed), EUNAVAILABLE.
	BuildSpec(ctx context.Context, namespace, function string, version int) (BuildSpec, error)
}

// BuildSourceUser is implemented by drivers that build missing versions
// themselves (the local driver); New hands such a driver the Workers as its
// BuildSource.
type BuildSourceUser interface {
	// UseBuildSource sets where missing builds come from.
	UseBuildSource(BuildSource)
}

// DiskFullMessage is what a build says when the build server's disk is
// full: a platform failure, retried, that names no path of the host.
const DiskFullMessage = "the build server's disk is full (no space left on device)"

// CodeFetcher reads stored code by object key (codestore.Store implements it).
type CodeFetcher interface {
	Get(ctx context.Context, key string) (io.ReadCloser, error)
}

// Workload is what every driver call about a version needs to know.
type Workload struct {
	Namespace string
	Function  string
	Version   int
	Image     string // BuildResult.Image of the version
	Config    domain.FunctionConfig
}

// BuildSpec asks for one version to be built.
type BuildSpec struct {
	Namespace  string
	Function   string
	Version    int
	Digest     string
	ZipKey     string // the user's original zip
	ContextKey string // build context tar.gz (user files + generated Dockerfile)
	Config     domain.FunctionConfig
	// Code serves the zip and the build context (by ZipKey and ContextKey)
	// as the workers checked them against the version, from memory; nil
	// when the workers have no code store.
	Code CodeFetcher
	// Progress takes the build's output as it comes, for people to follow
	// (`sless fn deploy`); nil takes none. A driver writes what it can
	// (the local driver: its build steps' output); BuildResult.Log stays
	// the whole log.
	Progress io.Writer
}

// BuildResult is the outcome of a build. Image names the artifact for Deploy
// and Run; Log is the tool output (compiler, npm, kaniko).
type BuildResult struct {
	Image   string
	Log     string
	Failed  bool
	Message string // a readable summary of a failure
}

// Deployment is the desired state of a function's HTTP workload.
type Deployment struct {
	Workload
	Replicas int // 0 = stopped
	// Retire names endpoints (as Scale returned them) of the instances to
	// stop first when Scale has more than Replicas running.
	Retire []string
}

// RunSpec asks for one job run (or cron slot).
type RunSpec struct {
	Workload
	Name  string          // job name, or "<trigger>-<slot unix time>" for cron runs
	RunID int64           // job run id; the slot time for cron runs
	Event json.RawMessage // SLESS_EVENT
}

// RunResult is the output of a run: ExitCode 0 means success, 124 a timeout.
type RunResult struct {
	ExitCode int
	Stdout   string
	Stderr   string
	TimedOut bool
}

// CronRun is a finished run of a Scheduler driver's schedule.
type CronRun struct {
	Namespace, Function, Trigger string
	Version                      int
	// Name names the run (the driver's own, e.g. its Job's name): the
	// invocation log's path of the record.
	Name string
	// TimeoutSec is the version's timeout, for the message of a timeout.
	TimeoutSec     int
	Started, Ended time.Time
	Result         RunResult
}

// CronSpec is the desired schedule of one cron trigger.
type CronSpec struct {
	Workload
	Trigger  string
	Schedule string
	Enabled  bool
}

// SecretOpener decrypts the secrets a function version uses, for delivery
// to its instances and runs (secrets.Vault, through SecretOpenerFunc). A
// driver asks it each time it starts an instance or a run, and keeps no
// value on disk.
type SecretOpener interface {
	// OpenSecret returns the value of version of the namespace's secret.
	// Errors: ENOTFOUND (the secret or that version was deleted),
	// EUNAVAILABLE, EINTERNAL.
	OpenSecret(ctx context.Context, namespace, name string, version int) ([]byte, error)
}

// SecretOpenerFunc is a function that is a SecretOpener.
type SecretOpenerFunc func(ctx context.Context, namespace, name string, version int) ([]byte, error)

// OpenSecret calls f.
func (f SecretOpenerFunc) OpenSecret(ctx context.Context, namespace, name string, version int) ([]byte, error) {
	return f(ctx, namespace, name, version)
}

// SecretOpenerUser is implemented by drivers that deliver secrets; New
// hands such a driver the platform's opener (none when the operator set no
// secrets key: a version that uses secrets then cannot start).
type SecretOpenerUser interface {
	UseSecrets(SecretOpener)
}

// SecretValues are a workload's opened secrets: Env as NAME=value entries
// sorted by name, Files by secret name (each delivered at
// domain.SecretFilesDir/<name>).
type SecretValues struct {
	Env   []string
	Files map[string][]byte
}

// OpenSecrets opens the secrets w's configuration uses through o. A
// workload that uses none needs no opener. A secret that cannot be opened is
// EUNPROCESSABLE naming it (the version cannot start: its secret was
// deleted), or the opener's EUNAVAILABLE; the message never holds a value.
func OpenSecrets(ctx context.Context, o SecretOpener, w Workload) (SecretValues, error) {
	cfg := w.Config
	names := cfg.SecretNames()
	if len(names) == 0 {
		return SecretValues{}, nil
	}
	if o == nil {
		return SecretValues{}, domain.Errorf(domain.EUNPROCESSABLE,
			"version %d uses secrets, but this platform has no secrets key (SLESS_SECRETS_KEY); ask the operator", w.Version)
	}
	values := make(map[string][]byte, len(names))
	for _, name := range names {
		v, err := o.OpenSecret(ctx, w.Namespace, name, cfg.SecretVersions[name])
		if domain.ErrorCode(err) == domain.ENOTFOUND {
			return SecretValues{}, domain.Errorf(domain.EUNPROCESSABLE,
				"version %d uses version %d of secret %q, which was deleted; set the secret and deploy again, or roll back to a version that does not use it",
				w.Version, cfg.SecretVersions[name], name)
		}
		if err != nil {
			return SecretValues{}, err
		}
		values[name] = v
	}
	var sv SecretValues
	for env, name := range cfg.Secrets {
		if slices.Contains(values[name], 0) {
			return SecretValues{}, domain.Errorf(domain.EUNPROCESSABLE,
				"secret %q holds a NUL byte, which an environment variable cannot; read it from secret_files instead", name)
		}
		sv.Env = append(sv.Env, env+"="+string(values[name]))
	}
	slices.Sort(sv.Env)
	for _, name := range cfg.SecretFiles {
		if sv.Files == nil {
			sv.Files = map[string][]byte{}
		}
		sv.Files[name] = values[name]
	}
	return sv, nil
}
