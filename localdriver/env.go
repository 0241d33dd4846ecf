package localdriver

import (
	"slices"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/runtimes"
)

// memoryAllowanceMB is added to memory_mb for RLIMIT_DATA: what the runtimes
// map for themselves before the function allocates anything (Go's heap
// metadata ~70 MiB, Node.js ~50 MiB, Python ~20 MiB plus 8 MiB of stack per
// request thread).
const memoryAllowanceMB = 256

// processEnv is the environment of a function process after the runtime's
// base: the function's variables (sorted, for reproducible starts), its
// secret variables (secrets, NAME=value sorted, as driver.OpenSecrets gives
// them), the runtime's own memory settings (runtimes.Description.MemoryEnv:
// Python has none, RLIMIT_DATA from limitMemory is its only limit),
// SLESS_ENTRYPOINT unless the runtime compiles it in, then the platform's
// variables, which win over a function variable of the same name.
func processEnv(w driver.Workload, secrets []string, platform ...string) []string {
	cfg := w.Config
	env := make([]string, 0, len(cfg.EnvVars)+len(secrets)+len(platform)+2)
	for name, value := range cfg.EnvVars {
		env = append(env, name+"="+value)
	}
	slices.Sort(env)
	env = append(env, secrets...)
	rt := runtimes.Describe(cfg.Runtime)
	env = append(env, rt.MemoryEnv(memoryMB(cfg), cfg.EnvVars)...)
	env = append(env, rt.ProcessEntrypointEnv(cfg.Entrypoint)...)
	return append(env, platform...)
}

// memoryMB is the function's memory_mb, or the default.
func memoryMB(cfg domain.FunctionConfig) int {
	if cfg.MemoryMB <= 0 {
		return domain.DefaultMemoryMB
	}
	return cfg.MemoryMB
}

// timeoutSec is the function's timeout_sec, or the default.
func timeoutSec(cfg domain.FunctionConfig) int {
	if cfg.TimeoutSec <= 0 {
		return domain.DefaultTimeoutSec
	}
	return cfg.TimeoutSec
}
