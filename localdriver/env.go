package localdriver

import (
	"slices"
	"strconv"
	"strings"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/workers"
)

// memoryAllowanceMB is added to memory_mb for RLIMIT_DATA: what the runtimes
// map for themselves before the function allocates anything (Go's heap
// metadata ~70 MiB, Node.js ~50 MiB, Python ~20 MiB plus 8 MiB of stack per
// request thread).
const memoryAllowanceMB = 256

// processEnv is the environment of a function process after the runtime's
// base: the function's variables (sorted, for reproducible starts), the
// runtime's own memory settings, then the platform's variables, which win
// over a function variable of the same name.
func processEnv(w workers.Workload, platform ...string) []string {
	cfg := w.Config
	env := make([]string, 0, len(cfg.EnvVars)+len(platform)+2)
	for name, value := range cfg.EnvVars {
		env = append(env, name+"="+value)
	}
	slices.Sort(env)
	env = append(env, memoryEnv(cfg)...)
	if cfg.Runtime != domain.RuntimeGo123 { // Go compiles the entrypoint in
		env = append(env, "SLESS_ENTRYPOINT="+cfg.Entrypoint)
	}
	return append(env, platform...)
}

// memoryEnv makes the runtime itself respect memory_mb where it can: V8's
// heap limit (its garbage collector works harder near it, then the process
// dies with "heap out of memory") and Go's soft memory limit. Python has no
// such knob; RLIMIT_DATA (limitMemory) is its only limit.
func memoryEnv(cfg domain.FunctionConfig) []string {
	mb := memoryMB(cfg)
	switch cfg.Runtime {
	case domain.RuntimeNodeJS20:
		opts := "--max-old-space-size=" + strconv.Itoa(mb)
		if user := strings.TrimSpace(cfg.EnvVars["NODE_OPTIONS"]); user != "" {
			opts += " " + user
		}
		return []string{"NODE_OPTIONS=" + opts}
	case domain.RuntimeGo123:
		if _, set := cfg.EnvVars["GOMEMLIMIT"]; !set {
			return []string{"GOMEMLIMIT=" + strconv.Itoa(mb) + "MiB"}
		}
	}
	return nil
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
