package domain

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FunctionPhase is where a function is in its lifecycle. Once no build is
// awaited it says what serves: Ready while a version is active and its
// rollout did not fail, Failed when nothing can serve.
//
//	Pending ──upload──► Building ──build ok + activate──► Ready ◄─┐ rollout completed,
//	                     │   ▲                              │      │ rollback, upload of
//	                     │   └──── new version / config ────┤      │ a built version
//	                     │                                  └──► Failed (rollout failed)
//	                     ├──build failed, a version active──► Ready (Failed if its rollout failed)
//	                     └──build failed, none active───────► Failed
//
// A newer version whose build failed leaves the active one serving: the
// function stays Ready and reports the failure as LastBuildFailure.
type FunctionPhase string

// Every function phase.
const (
	PhasePending  FunctionPhase = "Pending"
	PhaseBuilding FunctionPhase = "Building"
	PhaseReady    FunctionPhase = "Ready"
	PhaseFailed   FunctionPhase = "Failed"
)

// BuildStatus is the state of one version's build: Queued → Building → Succeeded | Failed.
type BuildStatus string

// Every build status.
const (
	BuildStatusQueued    BuildStatus = "Queued"
	BuildStatusBuilding  BuildStatus = "Building"
	BuildStatusSucceeded BuildStatus = "Succeeded"
	BuildStatusFailed    BuildStatus = "Failed"
)

// FunctionConfig is the user-set configuration of a function, snapshotted in every version.
type FunctionConfig struct {
	Runtime    Runtime           `json:"runtime"`
	Entrypoint string            `json:"entrypoint"`
	MemoryMB   int               `json:"memory_mb"`
	TimeoutSec int               `json:"timeout_sec"`
	EnvVars    map[string]string `json:"env_vars"`
	// MaxConcurrency bounds the requests the function serves at once; the
	// invoke proxy answers 429 beyond it. 0 means the platform's default.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// RetrySafe declares that running the function twice with one event does
	// no harm: a job run interrupted by a shutdown is then run again, and
	// otherwise it fails with "interrupted by shutdown".
	RetrySafe bool `json:"retry_safe,omitempty"`
	// Async is how asynchronous invocations are delivered; nil takes the
	// defaults (AsyncPolicy).
	Async *AsyncConfig `json:"async,omitempty"`
	// Scale is how many instances run and how many requests each takes.
	Scale ScaleConfig `json:"scale,omitzero"`
	// Secrets names the namespace secret each of these environment
	// variables takes its value from (variable name → secret name).
	Secrets map[string]string `json:"secrets,omitempty"`
	// SecretFiles names the secrets the function reads as files, each at
	// SecretFilesDir/<secret name>; sorted.
	SecretFiles []string `json:"secret_files,omitempty"`
	// SecretVersions is the version of each secret the function uses
	// (secret name → version), set by the platform when the configuration
	// is made: a version of the function keeps the values it was made
	// with, and a new secret version makes a new function version.
	SecretVersions map[string]int `json:"secret_versions,omitempty"`
}

// Equal reports whether two configurations are the same (nil and empty env alike).
func (c FunctionConfig) Equal(o FunctionConfig) bool {
	return c.Runtime == o.Runtime && c.Entrypoint == o.Entrypoint && c.MemoryMB == o.MemoryMB &&
		c.TimeoutSec == o.TimeoutSec && c.MaxConcurrency == o.MaxConcurrency && c.RetrySafe == o.RetrySafe && maps.Equal(c.EnvVars, o.EnvVars) &&
		c.AsyncPolicy() == o.AsyncPolicy() && c.Scale == o.Scale &&
		maps.Equal(c.Secrets, o.Secrets) && slices.Equal(c.SecretFiles, o.SecretFiles) && maps.Equal(c.SecretVersions, o.SecretVersions)
}

// FunctionSpec is a requested configuration; zero values take the defaults.
type FunctionSpec struct {
	Runtime    string
	Entrypoint string
	MemoryMB   int
	TimeoutSec int
	EnvVars    map[string]string
	// MaxConcurrency: 0 takes the platform's default.
	MaxConcurrency int
	// RetrySafe: see FunctionConfig.RetrySafe.
	RetrySafe bool
	// Async: see FunctionConfig.Async; nil takes the defaults.
	Async *AsyncConfig
	// Scale: see FunctionConfig.Scale.
	Scale ScaleConfig
	// Secrets and SecretFiles: see FunctionConfig.
	Secrets     map[string]string
	SecretFiles []string
	// SecretVersions are the newest versions of the namespace's secrets
	// (at least of those the spec uses), as the caller read them.
	SecretVersions map[string]int
}

// Config validates the spec, fills in defaults and returns the configuration.
// It returns EINVALID naming the first bad field.
func (s FunctionSpec) Config() (FunctionConfig, error) {
	rt, err := ParseRuntime(s.Runtime)
	if err != nil {
		return FunctionConfig{}, err
	}
	c := FunctionConfig{Runtime: rt, Entrypoint: s.Entrypoint, MemoryMB: s.MemoryMB, TimeoutSec: s.TimeoutSec,
		EnvVars: maps.Clone(s.EnvVars), MaxConcurrency: s.MaxConcurrency, RetrySafe: s.RetrySafe, Scale: s.Scale,
		Secrets: maps.Clone(s.Secrets), SecretFiles: slices.Clone(s.SecretFiles)}
	if c.Entrypoint == "" {
		c.Entrypoint = DefaultEntrypoint(rt)
	}
	if c.MemoryMB == 0 {
		c.MemoryMB = DefaultMemoryMB
	}
	if c.TimeoutSec == 0 {
		c.TimeoutSec = DefaultTimeoutSec
	}
	if c.EnvVars == nil {
		c.EnvVars = map[string]string{}
	}
	if err := ValidateEntrypoint(rt, c.Entrypoint); err != nil {
		return FunctionConfig{}, err
	}
	if c.MemoryMB < MinMemoryMB || c.MemoryMB > MaxMemoryMB {
		return FunctionConfig{}, FieldErrorf("memory_mb", "%d is out of range; use %d to %d (MiB)", c.MemoryMB, MinMemoryMB, MaxMemoryMB)
	}
	if c.TimeoutSec < MinTimeoutSec || c.TimeoutSec > MaxTimeoutSec {
		return FunctionConfig{}, FieldErrorf("timeout_sec", "%d is out of range; use %d to %d (seconds)", c.TimeoutSec, MinTimeoutSec, MaxTimeoutSec)
	}
	if c.MaxConcurrency < 0 || c.MaxConcurrency > MaxConcurrency {
		return FunctionConfig{}, FieldErrorf("max_concurrency", "%d is out of range; use 1 to %d requests at once, or 0 for the platform's default", c.MaxConcurrency, MaxConcurrency)
	}
	if err := ValidateEnvVars(c.EnvVars); err != nil {
		return FunctionConfig{}, err
	}
	if err := c.Scale.validate(); err != nil {
		return FunctionConfig{}, err
	}
	if err := c.validateSecrets(s.SecretVersions); err != nil {
		return FunctionConfig{}, err
	}
	if s.Async != nil {
		a := *s.Async
		if a.MaxEventAgeSec == 0 {
			a.MaxEventAgeSec = DefaultAsyncMaxEventAgeSec
		}
		if err := a.validate(); err != nil {
			return FunctionConfig{}, err
		}
		if a != DefaultAsyncConfig() {
			c.Async = &a
		}
	}
	return c, nil
}

// BuildFailure names a version whose build failed, with the build's message.
type BuildFailure struct {
	Version int
	Message string
}

// Version is one immutable, numbered snapshot of code and configuration.
type Version struct {
	Number      int
	Digest      string
	ZipKey      string
	ContextKey  string
	Config      FunctionConfig
	BuildStatus BuildStatus
	Image       string
	Message     string
	BuildLog    string
	CreatedAt   time.Time
	BuiltAt     time.Time
}

// Function is the aggregate of a function and its versions, folded from its stream.
// A deleted function has Exists false; its stream goes on if the name is reused.
type Function struct {
	Namespace string
	Name      string
	Exists    bool
	// Config is the configuration a GET shows, a PUT merges over and an
	// upload snapshots: the active version's, or a newer one's while that
	// version is being built (or failed), or a runtime change awaiting code.
	Config        FunctionConfig
	Versions      []Version
	ActiveVersion int
	Phase         FunctionPhase
	Message       string
	CreatedAt     time.Time
	LastBuiltAt   time.Time
	Endpoint      string
	// Incarnation counts the creations of a function of this name: its
	// stream goes on after a delete, and a re-created function numbers its
	// versions from 1 again, so work queued for one incarnation (the build
	// of its version 1) names it and is never taken for another's.
	Incarnation int
	// ServingVersion is the version the last completed rollout runs (behind
	// Endpoint when there is one): it trails ActiveVersion while a new
	// version is being rolled out, and is 0 after a failed rollout.
	ServingVersion int
	// LastBuildFailure is the newest version when its build failed, zero
	// otherwise. While an older version is active it does not make the
	// function Failed (the phase says what serves); it is shown beside it.
	LastBuildFailure BuildFailure
	// RolloutFailure is why the last rollout of the active version failed:
	// empty once one completes or another version is activated. It keeps
	// the function Failed when a newer version's build ends.
	RolloutFailure string
}

// NewFunction returns the empty aggregate for a function name, ready to fold events into.
func NewFunction(ns, name string) *Function {
	return &Function{Namespace: ns, Name: name}
}

// Version returns version n, if it exists.
func (f *Function) Version(n int) (Version, bool) {
	if n < 1 || n > len(f.Versions) {
		return Version{}, false
	}
	return f.Versions[n-1], true
}

func (f *Function) version(n int) *Version {
	if n < 1 || n > len(f.Versions) {
		return nil
	}
	return &f.Versions[n-1]
}

// Latest returns the newest version, if any.
func (f *Function) Latest() (Version, bool) { return f.Version(len(f.Versions)) }

// Runnable returns the version the function's work runs on — its workload
// behind http triggers, its cron runs and its job runs — and whether there
// is one: the active version, when the function exists and that version's
// build succeeded. Otherwise it returns false with the active version as
// the function has it (the zero Version when none is active), whose
// BuildStatus says why it cannot run.
func (f *Function) Runnable() (Version, bool) {
	v, _ := f.Version(f.ActiveVersion)
	return v, f.CanRun(v)
}

// CanRun reports whether version v of the function can run: the function
// exists and v's build succeeded. Runnable asks it of the active version; it
// is asked directly of the version a job run started on (which that run
// keeps), and by a caller holding the function's read-model row, which has
// no Versions, of the active version it fetched.
func (f *Function) CanRun(v Version) bool {
	return f.Exists && v.Number > 0 && v.BuildStatus == BuildStatusSucceeded
}

// Apply folds one event into the aggregate. Events of other aggregates are ignored.
func (f *Function) Apply(ev Event) {
	switch e := ev.(type) {
	case FunctionCreated:
		*f = Function{Namespace: e.Namespace, Name: e.Name, Exists: true, Config: e.Config, Phase: PhasePending, CreatedAt: e.At,
			Incarnation: f.Incarnation + 1}
	case FunctionConfigUpdated:
		f.Config = e.Config
	case FunctionDeleted:
		*f = Function{Namespace: f.Namespace, Name: f.Name, Incarnation: f.Incarnation}
	case VersionCreated:
		f.Versions = append(f.Versions, Version{Number: e.Version, Digest: e.Digest, ZipKey: e.ZipKey, ContextKey: e.ContextKey, Config: e.Config, BuildStatus: BuildStatusQueued, CreatedAt: e.At})
		f.Config = e.Config
		f.Phase, f.Message = PhaseBuilding, ""
		f.LastBuildFailure = f.lastBuildFailure()
	case BuildStarted:
		if v := f.version(e.Version); v != nil {
			v.BuildStatus = BuildStatusBuilding
		}
	case BuildSucceeded:
		if v := f.version(e.Version); v != nil {
			v.BuildStatus, v.Image, v.Message, v.BuildLog, v.BuiltAt = BuildStatusSucceeded, e.Image, "", e.Log, e.At
			f.LastBuiltAt = e.At
		}
		f.LastBuildFailure = f.lastBuildFailure()
	case BuildFailed:
		if v := f.version(e.Version); v != nil {
			v.BuildStatus, v.Message, v.BuildLog, v.BuiltAt = BuildStatusFailed, e.Message, e.Log, e.At
			f.LastBuiltAt = e.At
		}
		f.LastBuildFailure = f.lastBuildFailure()
		if e.Version == len(f.Versions) {
			f.Phase, f.Message = f.servingPhase(e.Message)
		}
	case VersionActivated:
		f.ActiveVersion, f.RolloutFailure = e.Version, ""
		f.Phase, f.Message = PhaseReady, ""
		// Activating an existing version (a rollback, or an upload of its
		// code and configuration) brings back its configuration, so what a
		// GET shows and a PUT merges over is what runs. A build activates
		// the newest version, whose configuration is already the function's
		// unless a runtime change (which waits for code) came after it.
		// The async and scale configurations are the function's, not a
		// version's: they stay as they are.
		if v := f.version(e.Version); v != nil && e.Reason != ActivationBuild {
			async, scale := f.Config.Async, f.Config.Scale
			f.Config = v.Config
			f.Config.Async, f.Config.Scale = async, scale
		}
	case RolloutCompleted:
		if e.Version == f.ActiveVersion {
			f.Endpoint, f.ServingVersion, f.RolloutFailure = e.Endpoint, e.Version, ""
			if f.Phase != PhaseBuilding {
				f.Phase, f.Message = PhaseReady, ""
			}
		}
	case RolloutFailed:
		if e.Version == f.ActiveVersion {
			f.Endpoint, f.ServingVersion, f.RolloutFailure = "", 0, e.Message
			f.Phase, f.Message = PhaseFailed, e.Message
		}
	}
}

// servingPhase is the phase once the build the function waited for has
// failed with message buildError: what serves decides, not that build.
// With a version active the function is Ready, or Failed with its
// rollout's error when that failed; with none it is Failed with buildError.
func (f *Function) servingPhase(buildError string) (FunctionPhase, string) {
	switch {
	case f.ActiveVersion == 0:
		return PhaseFailed, buildError
	case f.RolloutFailure != "":
		return PhaseFailed, f.RolloutFailure
	}
	return PhaseReady, ""
}

// lastBuildFailure is the newest version's failed build, if it failed.
func (f *Function) lastBuildFailure() BuildFailure {
	if v, ok := f.Latest(); ok && v.BuildStatus == BuildStatusFailed {
		return BuildFailure{Version: v.Number, Message: v.Message}
	}
	return BuildFailure{}
}

// Create returns the events that create the function, or ECONFLICT when it
// exists and EINVALID for a bad name or spec.
func (f *Function) Create(spec FunctionSpec, now time.Time) ([]Event, error) {
	if err := ValidateName("name", f.Name); err != nil {
		return nil, err
	}
	if f.Exists {
		return nil, Errorf(ECONFLICT, "function %q already exists", f.Name)
	}
	cfg, err := spec.Config()
	if err != nil {
		return nil, err
	}
	return []Event{FunctionCreated{Namespace: f.Namespace, Name: f.Name, Config: cfg, At: now}}, nil
}

// UpdateConfig returns the events of a configuration change: the new config and,
// when code for the same runtime exists, a new version that reuses the current
// code (currentCode: the active version's, or the newest upload's while it
// awaits its build). A runtime change creates no version: the stored code (and
// its build context) is for the old runtime, so the next upload makes the
// version while the active one keeps running. Identical configuration yields
// no events. Returns ENOTFOUND or EINVALID.
func (f *Function) UpdateConfig(spec FunctionSpec, now time.Time) ([]Event, error) {
	if err := f.mustExist(); err != nil {
		return nil, err
	}
	cfg, err := spec.Config()
	if err != nil {
		return nil, err
	}
	if cfg.Equal(f.Config) {
		return nil, nil
	}
	evs := []Event{FunctionConfigUpdated{Config: cfg, At: now}}
	if cfg.runsLike(f.Config) {
		// Only how asynchronous invocations are delivered or how many
		// instances run changed: the async worker and the scaler read it
		// from the function, the code runs alike, so no version is made.
		return evs, nil
	}
	if cur, ok := f.currentCode(); ok && cur.Config.Runtime == cfg.Runtime {
		evs = append(evs, f.newVersion(cur.Digest, cur.ZipKey, cur.ContextKey, cfg, now)...)
	}
	return evs, nil
}

// currentCode is the version whose code a configuration change carries on:
// the code that serves, the active version's, unless the newest version
// awaits its build (the latest upload goes on, with the new configuration)
// or none is active (the newest is all there is). So a change after a
// rollback, or after a newer version failed its build (the user may have
// gone back to the active code by uploading it again, which records
// nothing), does not bring back code that does not serve; a failed
// version's code is tried with new configuration by uploading it again.
func (f *Function) currentCode() (Version, bool) {
	latest, ok := f.Latest()
	if !ok {
		return Version{}, false
	}
	if active, ok := f.Version(f.ActiveVersion); ok && !f.NeedsBuild(latest.Number) {
		return active, true
	}
	return latest, true
}

// Code names uploaded code in object storage by its content digest.
type Code struct {
	Digest     string
	ZipKey     string
	ContextKey string
}

// Upload returns the events of new code, and the number of the version the
// function is left on. Code and configuration (the function's) identical to
//   - the active version: no events, the active version;
//   - the newest version while its build is queued or running, or after it
//     failed: no events, that version (one build per version: the same code
//     would fail the same way) — unless it failed because its stored code
//     had been changed after the upload (Version.StoredCodeChanged) or the
//     platform could not run its build (Version.PlatformFailed): the code
//     uploaded again is then a new version, built afresh;
//   - another successfully built version, while no newer one awaits its
//     build: that version's activation (reason ActivationUpload), as a
//     rollback to it would make.
//
// Any other code is a new version (newVersion), which reuses the build of
// the same code for the same runtime and entrypoint. Returns ENOTFOUND.
func (f *Function) Upload(code Code, now time.Time) ([]Event, int, error) {
	if err := f.mustExist(); err != nil {
		return nil, 0, err
	}
	same := func(v Version) bool { return v.Digest == code.Digest && v.Config.runsLike(f.Config) } // async and scale are the function's
	if active, ok := f.Version(f.ActiveVersion); ok && same(active) {
		return nil, active.Number, nil
	}
	latest, ok := f.Latest()
	if ok && same(latest) && latest.BuildStatus != BuildStatusSucceeded && !latest.StoredCodeChanged() && !latest.PlatformFailed() {
		return nil, latest.Number, nil
	}
	if !f.NeedsBuild(latest.Number) {
		for i := len(f.Versions) - 1; i >= 0; i-- {
			if v := f.Versions[i]; v.BuildStatus == BuildStatusSucceeded && same(v) {
				return []Event{VersionActivated{Version: v.Number, From: f.ActiveVersion, Reason: ActivationUpload, At: now}}, v.Number, nil
			}
		}
	}
	evs := f.newVersion(code.Digest, code.ZipKey, code.ContextKey, f.Config, now)
	return evs, len(f.Versions) + 1, nil
}

// storedCodeChanged begins the message of a build that failed because the
// version's stored code was no longer the code uploaded: store/codestore's
// messages for a zip, or a build context, changed in the object store after
// the upload (a workers test checks that the build's message still begins
// so).
var storedCodeChanged = []string{
	"the stored code of this version does not match the digest recorded at upload",
	"the stored build context of this version does not match the hash in its name",
}

// StoredCodeChanged reports whether v's build failed because its stored code
// had been changed in the object store after the upload, not because of the
// code itself: the same code uploaded again is then built afresh (Upload).
func (v Version) StoredCodeChanged() bool {
	if v.BuildStatus != BuildStatusFailed {
		return false
	}
	for _, prefix := range storedCodeChanged {
		if strings.HasPrefix(v.Message, prefix) {
			return true
		}
	}
	return false
}

// BuildCouldNotRun begins the message of a build that failed because the
// platform could not run it (its attempts ran out on a failure of the build
// server, such as a full disk), not because of the code.
const BuildCouldNotRun = "the build could not run"

// PlatformFailed reports whether v's build failed because the platform
// could not run it (BuildCouldNotRun): the same code uploaded again is then
// built afresh (Upload).
func (v Version) PlatformFailed() bool {
	return v.BuildStatus == BuildStatusFailed && strings.HasPrefix(v.Message, BuildCouldNotRun)
}

// newVersion creates the next version. If a built version has the same code and
// runtime, its image is reused at once: no rebuild for a configuration change.
func (f *Function) newVersion(digest, zipKey, ctxKey string, cfg FunctionConfig, now time.Time) []Event {
	n := len(f.Versions) + 1
	evs := []Event{VersionCreated{Version: n, Digest: digest, ZipKey: zipKey, ContextKey: ctxKey, Config: cfg, At: now}}
	for i := len(f.Versions) - 1; i >= 0; i-- {
		v := f.Versions[i]
		if v.Digest == digest && v.BuildStatus == BuildStatusSucceeded && v.Config.Runtime == cfg.Runtime && v.Config.Entrypoint == cfg.Entrypoint {
			return append(evs,
				BuildSucceeded{Version: n, Image: v.Image, Log: "reused the build of version " + strconv.Itoa(v.Number), At: now},
				VersionActivated{Version: n, From: f.ActiveVersion, Reason: ActivationBuild, At: now})
		}
	}
	return evs
}

// NeedsBuild reports whether version n still waits for a build.
func (f *Function) NeedsBuild(n int) bool {
	v, ok := f.Version(n)
	return ok && (v.BuildStatus == BuildStatusQueued || v.BuildStatus == BuildStatusBuilding)
}

// StartBuild returns BuildStarted for a queued version, nothing if it is already
// building or done (at-least-once delivery), ENOTFOUND for an unknown version.
func (f *Function) StartBuild(n int, now time.Time) ([]Event, error) {
	v, err := f.existingVersion(n)
	if err != nil {
		return nil, err
	}
	if v.BuildStatus != BuildStatusQueued {
		return nil, nil
	}
	return []Event{BuildStarted{Version: n, At: now}}, nil
}

// SucceedBuild returns the build outcome and, when n is the newest version, its
// activation. A version already built or failed yields nothing. Returns ENOTFOUND.
func (f *Function) SucceedBuild(n int, image, log string, now time.Time) ([]Event, error) {
	v, err := f.existingVersion(n)
	if err != nil {
		return nil, err
	}
	if v.BuildStatus == BuildStatusSucceeded || v.BuildStatus == BuildStatusFailed {
		return nil, nil
	}
	evs := []Event{BuildSucceeded{Version: n, Image: image, Log: TruncateStart(Storable(log), MaxBuildLog), At: now}}
	if n == len(f.Versions) && f.ActiveVersion != n {
		evs = append(evs, VersionActivated{Version: n, From: f.ActiveVersion, Reason: ActivationBuild, At: now})
	}
	return evs, nil
}

// FailBuild returns BuildFailed with the message truncated to 2,000 characters
// and the full log kept. A version already built or failed yields nothing.
func (f *Function) FailBuild(n int, message, log string, now time.Time) ([]Event, error) {
	v, err := f.existingVersion(n)
	if err != nil {
		return nil, err
	}
	if v.BuildStatus == BuildStatusSucceeded || v.BuildStatus == BuildStatusFailed {
		return nil, nil
	}
	return []Event{BuildFailed{Version: n, Message: Truncate(Storable(message), MaxMessageLength), Log: TruncateStart(Storable(log), MaxBuildLog), At: now}}, nil
}

// Rollback makes version n active again without a rebuild, with its
// configuration; the function is Ready again (until its rollout fails). It
// returns ENOTFOUND for an unknown version, EUNPROCESSABLE for one not built
// successfully, and nothing when n is already active.
func (f *Function) Rollback(n int, now time.Time) ([]Event, error) {
	v, err := f.existingVersion(n)
	if err != nil {
		return nil, err
	}
	if v.BuildStatus != BuildStatusSucceeded {
		return nil, Errorf(EUNPROCESSABLE, "version %d cannot be activated: its build status is %s; only successfully built versions can be rolled back to", n, v.BuildStatus)
	}
	if f.ActiveVersion == n {
		return nil, nil
	}
	return []Event{VersionActivated{Version: n, From: f.ActiveVersion, Reason: ActivationRollback, At: now}}, nil
}

// CompleteRollout records that the driver runs version n, serving it at
// endpoint when there is one (an http trigger is enabled); a repeat yields
// nothing.
func (f *Function) CompleteRollout(n int, endpoint string, now time.Time) ([]Event, error) {
	if err := f.mustExist(); err != nil {
		return nil, err
	}
	if f.Endpoint == endpoint && f.Phase == PhaseReady && f.ActiveVersion == n && f.ServingVersion == n {
		return nil, nil
	}
	return []Event{RolloutCompleted{Version: n, Endpoint: endpoint, At: now}}, nil
}

// FailRollout records that the driver could not run version n; a repeat yields nothing.
func (f *Function) FailRollout(n int, message string, now time.Time) ([]Event, error) {
	if err := f.mustExist(); err != nil {
		return nil, err
	}
	message = Truncate(message, MaxMessageLength)
	if f.Phase == PhaseFailed && f.Message == message {
		return nil, nil
	}
	return []Event{RolloutFailed{Version: n, Message: message, At: now}}, nil
}

// Delete returns FunctionDeleted, or ENOTFOUND when there is nothing to delete.
func (f *Function) Delete(now time.Time) ([]Event, error) {
	if err := f.mustExist(); err != nil {
		return nil, err
	}
	return []Event{FunctionDeleted{At: now}}, nil
}

func (f *Function) mustExist() error {
	if !f.Exists {
		return Errorf(ENOTFOUND, "function %q not found", f.Name)
	}
	return nil
}

func (f *Function) existingVersion(n int) (Version, error) {
	if err := f.mustExist(); err != nil {
		return Version{}, err
	}
	v, ok := f.Version(n)
	if !ok {
		return Version{}, Errorf(ENOTFOUND, "function %q has no version %d", f.Name, n)
	}
	return v, nil
}
