package wire

import (
	"time"

	"github.com/slessio/sless/domain"
)

// Function is a function as the API shows it (SPEC §2): the configuration of
// its active version and its lifecycle phase.
type Function struct {
	Namespace  string            `json:"namespace"`
	Name       string            `json:"name"`
	Runtime    string            `json:"runtime"`
	Entrypoint string            `json:"entrypoint"`
	MemoryMB   int               `json:"memory_mb"`
	TimeoutSec int               `json:"timeout_sec"`
	EnvVars    map[string]string `json:"env_vars"`
	// MaxConcurrency is how many requests the function serves at once
	// through /fn (429 beyond); 0 means the platform's default.
	MaxConcurrency int `json:"max_concurrency"`
	// RetrySafe is domain.FunctionConfig.RetrySafe: whether a job run
	// interrupted by a server shutdown is run again.
	RetrySafe bool                 `json:"retry_safe" doc:"true: a job run interrupted by a server shutdown is run again; false (default): it fails with \"interrupted by shutdown\""`
	Phase     domain.FunctionPhase `json:"phase"`
	// Message explains the phase, e.g. the build error of a Failed function.
	Message string `json:"message"`
	// LastBuildFailure is the newest version when its build failed, null
	// otherwise. While an older version is active and runs, the function is
	// Ready all the same: the phase says what serves.
	LastBuildFailure *BuildFailure `json:"last_build_failure"`
	// ActiveVersion is the version triggers run; 0 before the first build.
	ActiveVersion int `json:"active_version"`
	// ServingVersion is the version the last completed rollout runs: behind
	// the http trigger's URL when one is enabled. It trails active_version
	// while a new version is being rolled out; 0 before the first rollout
	// and after a failed one.
	ServingVersion int `json:"serving_version"`
	// Async is how asynchronous invocations of the function are delivered.
	Async AsyncConfig `json:"async"`
	// MinInstances, MaxInstances and Concurrency are how the function
	// scales (domain.ScaleConfig): 0 takes the defaults.
	MinInstances int `json:"min_instances" doc:"instances kept running, never idled out (0, the default: scale to zero when idle)"`
	MaxInstances int `json:"max_instances" doc:"most instances at once (0: the platform's default, SLESS_FN_DEFAULT_MAX_INSTANCES)"`
	Concurrency  int `json:"concurrency" doc:"requests one instance takes at once (0: the runtime's default, 1 for python3.11 and nodejs20, 16 for go1.23)"`
	// Secrets and SecretFiles are the namespace secrets the function uses;
	// SecretVersions the version of each that its active version runs.
	Secrets        map[string]string `json:"secrets" doc:"environment variable name → namespace secret it takes its value from"`
	SecretFiles    []string          `json:"secret_files" doc:"namespace secrets the function reads as files, at /run/secrets/<name>"`
	SecretVersions map[string]int    `json:"secret_versions" doc:"secret name → the version of its value this configuration runs (set by the platform)"`
	// Warnings point out risky configuration, such as a credential in a
	// plain env var; only in the answer of a create or an update.
	Warnings []string `json:"warnings,omitempty" doc:"risky configuration, e.g. an env var whose name looks like a credential (use secrets)"`
	// Instances is what runs now on the server that answered; null when
	// it cannot say.
	Instances   *Instances `json:"instances,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	LastBuiltAt *time.Time `json:"last_built_at"`
}

// Instances is what runs of a function now, as the answering server's
// scaler sees it.
type Instances struct {
	Ready    int `json:"ready" doc:"instances serving"`
	Desired  int `json:"desired" doc:"instances the scaler wants"`
	InFlight int `json:"in_flight" doc:"requests being served or waiting for an instance"`
}

// AsyncConfig is domain.AsyncConfig: retries after the first attempt,
// the age past which an event is given up, and the deliveries at once.
type AsyncConfig struct {
	MaxRetries     int `json:"max_retries" doc:"attempts after the first for 429, 5xx, timeouts and connection errors (0 to 10, default 2)"`
	MaxEventAgeSec int `json:"max_event_age_sec" doc:"seconds after which a queued invocation is given up to the dead letters (60 to 21600, default 21600)"`
	MaxConcurrency int `json:"max_concurrency" doc:"asynchronous deliveries at once (0: no bound of their own)"`
}

// AsyncPatch sets some fields of AsyncConfig: a field left out keeps its
// current value (in a create: its default).
type AsyncPatch struct {
	MaxRetries     *int `json:"max_retries,omitempty" doc:"attempts after the first (0 to 10)"`
	MaxEventAgeSec *int `json:"max_event_age_sec,omitempty" doc:"seconds before a queued invocation is given up (60 to 21600)"`
	MaxConcurrency *int `json:"max_concurrency,omitempty" doc:"asynchronous deliveries at once (0: no bound of their own)"`
}

// BuildFailure is a version whose build failed, and the build's message
// (its full log is the version's build_log).
type BuildFailure struct {
	Version int    `json:"version"`
	Message string `json:"message"`
}

// FunctionList is the JSON answer of the function listing.
type FunctionList struct {
	Functions []Function `json:"functions"`
}

// CreateFunctionRequest is the body of POST .../functions; zero values take
// the defaults of SPEC §2 (memory_mb 128, timeout_sec 30, the runtime's entrypoint).
type CreateFunctionRequest struct {
	Name       string            `json:"name"`
	Runtime    string            `json:"runtime"`
	Entrypoint string            `json:"entrypoint,omitempty"`
	MemoryMB   int               `json:"memory_mb,omitempty"`
	TimeoutSec int               `json:"timeout_sec,omitempty"`
	EnvVars    map[string]string `json:"env_vars,omitempty"`
	// MaxConcurrency bounds the requests served at once (0: the platform's default).
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// RetrySafe declares that running the function twice with one event does
	// no harm (default false), see Function.RetrySafe.
	RetrySafe bool `json:"retry_safe,omitempty" doc:"true: a job run interrupted by a server shutdown is run again; false (default): it fails with \"interrupted by shutdown\""`
	// Async configures asynchronous invocations; left out, the defaults.
	Async *AsyncPatch `json:"async,omitempty"`
	// MinInstances, MaxInstances, Concurrency: see Function.
	MinInstances int `json:"min_instances,omitempty"`
	MaxInstances int `json:"max_instances,omitempty"`
	Concurrency  int `json:"concurrency,omitempty"`
	// Secrets and SecretFiles: see Function.
	Secrets     map[string]string `json:"secrets,omitempty"`
	SecretFiles []string          `json:"secret_files,omitempty"`
}

// UpdateFunctionRequest is the body of PUT .../functions/{name}. It is merged
// over the current configuration: a field left out (or null) keeps its value,
// env_vars replaces the whole map when given ({} clears it), and 0 for
// memory_mb or timeout_sec means the default, as in a create. Name, when
// given, must be the name in the path.
type UpdateFunctionRequest struct {
	Name           *string            `json:"name,omitempty"`
	Runtime        *string            `json:"runtime,omitempty"`
	Entrypoint     *string            `json:"entrypoint,omitempty"`
	MemoryMB       *int               `json:"memory_mb,omitempty"`
	TimeoutSec     *int               `json:"timeout_sec,omitempty"`
	EnvVars        *map[string]string `json:"env_vars,omitempty"`
	MaxConcurrency *int               `json:"max_concurrency,omitempty"`
	RetrySafe      *bool              `json:"retry_safe,omitempty" doc:"true: a job run interrupted by a server shutdown is run again; false: it fails with \"interrupted by shutdown\""`
	Async          *AsyncPatch        `json:"async,omitempty"`
	MinInstances   *int               `json:"min_instances,omitempty"`
	MaxInstances   *int               `json:"max_instances,omitempty"`
	Concurrency    *int               `json:"concurrency,omitempty"`
	// Secrets and SecretFiles replace the whole map or list when given
	// ({} and [] clear them).
	Secrets     *map[string]string `json:"secrets,omitempty"`
	SecretFiles *[]string          `json:"secret_files,omitempty"`
}
