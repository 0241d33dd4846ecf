package runtimes

import (
	"sort"

	"github.com/slessio/sless/domain"
)

// The environment of the process contract (see the package doc): the
// variables a driver sets on every function process or container. A user's
// variable may not take these names (domain.ValidateEnvVars).
const (
	EnvPort       = "PORT"              // the port a server listens on (default 8080)
	EnvHost       = "SLESS_HOST"        // the address a server listens on (default all interfaces)
	EnvEntrypoint = "SLESS_ENTRYPOINT"  // module.function, unless the entrypoint is compiled in
	EnvMode       = "SLESS_MODE"        // a Mode: server (default), job or check
	EnvEvent      = "SLESS_EVENT"       // a job's input, a JSON object (empty means {})
	EnvTimeoutSec = "SLESS_TIMEOUT_SEC" // a job's time limit in seconds
)

// BuildArgEntrypoint is the image build argument that names the entrypoint of
// a runtime whose entrypoint is compiled in (go1.23/Dockerfile).
const BuildArgEntrypoint = "SLESS_ENTRYPOINT"

// Description is what a driver needs to know about a runtime besides its
// wrapper files (Install), its build steps (Build), its start command
// (Command) and its base image (ImageContext). Each runtime's file
// (python.go, node.go, golang.go) registers its own; drivers ask it
// instead of switching on the runtime's name. The zero Description, which
// Describe returns for an unknown name, passes the entrypoint at run time,
// sets no memory knob and runs on a writable root.
type Description struct {
	// Name is the runtime's name, e.g. "python3.11"; empty for an unknown one.
	Name string
	// EntrypointCompiledIn says that the build compiles the entrypoint into
	// the program (Go): processes get no EnvEntrypoint, and an image build
	// takes it as the build argument BuildArgEntrypoint.
	EntrypointCompiledIn bool
	// ReadOnlyRoot says that the runtime's image runs with a read-only root
	// file system: the process writes below /tmp only.
	ReadOnlyRoot bool

	// memoryEnv, when set, is the runtime's memory knob (MemoryEnv).
	memoryEnv func(memoryMB int, userEnv map[string]string) []string
	lang      language
}

// MemoryEnv returns the environment entries that make the runtime itself
// respect a memory limit of memoryMB (Node.js: NODE_OPTIONS
// --max-old-space-size, before the user's own NODE_OPTIONS; Go: GOMEMLIMIT
// unless the user set it), given the function's own variables userEnv. It is
// nil for a runtime without such a knob (Python).
func (d Description) MemoryEnv(memoryMB int, userEnv map[string]string) []string {
	if d.memoryEnv == nil {
		return nil
	}
	return d.memoryEnv(memoryMB, userEnv)
}

// ProcessEntrypointEnv returns the EnvEntrypoint entry a process of the
// runtime gets for entrypoint: none when it is compiled in.
func (d Description) ProcessEntrypointEnv(entrypoint string) []string {
	if d.EntrypointCompiledIn {
		return nil
	}
	return []string{EnvEntrypoint + "=" + entrypoint}
}

// ImageBuildArgs returns the build arguments (NAME=value) of a function image
// of the runtime: BuildArgEntrypoint when the entrypoint is compiled in,
// none otherwise.
func (d Description) ImageBuildArgs(entrypoint string) []string {
	if d.EntrypointCompiledIn {
		return []string{BuildArgEntrypoint + "=" + entrypoint}
	}
	return nil
}

// registry holds every runtime's description by name; each runtime's file
// registers its own at init.
var registry = map[string]Description{}

// register adds a runtime; called from the init of each runtime's file.
func register(d Description) {
	if _, dup := registry[d.Name]; dup || d.lang == nil {
		panic("runtimes: bad or duplicate registration of " + d.Name)
	}
	registry[d.Name] = d
}

// Describe returns the description of the runtime called name, or the zero
// Description when there is none.
func Describe(name domain.Runtime) Description {
	return registry[string(name)]
}

// names returns the registered names, sorted.
func names() []string {
	out := make([]string, 0, len(registry))
	for name := range registry {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
