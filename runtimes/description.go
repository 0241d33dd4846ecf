package runtimes

import (
	"os"
	"sort"

	"github.com/slessio/sless/domain"
)

// The environment of the process contract (see the package doc): the
// variables a driver sets on every function process or container. A user's
// variable may not take these names (domain.ValidateEnvVars).
const (
	EnvPort       = "PORT"              // the port a server listens on (default 8080)
	EnvHost       = "SLESS_HOST"        // the address a server listens on (default all interfaces)
	EnvListenFD   = "SLESS_LISTEN_FD"   // a descriptor number: an inherited listening socket to serve on instead of SLESS_HOST:PORT
	EnvEntrypoint = "SLESS_ENTRYPOINT"  // module.function, unless the entrypoint is compiled in
	EnvMode       = "SLESS_MODE"        // a Mode: server (default), job or check
	EnvEvent      = "SLESS_EVENT"       // a job's input, a JSON object (empty means {})
	EnvTimeoutSec = "SLESS_TIMEOUT_SEC" // a job's time limit in seconds
	// EnvConcurrency is the requests the platform sends one server at once
	// (the function's concurrency): a wrapper may size its pool by it.
	EnvConcurrency = "SLESS_CONCURRENCY"
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
	// Pool says that the wrapper has a pool mode (ModePool, see
	// Specialization); PoolCaps are then the capabilities, as setpriv(1)
	// names them, that it needs to switch itself to its function's uid and
	// gid when it runs as root: all it may start with.
	Pool     bool
	PoolCaps []string

	// startVar, when set, says which variables of its own the runtime
	// reads only when it starts (PoolServes).
	startVar func(name string) bool
	// memoryEnv, when set, is the runtime's memory knob (MemoryEnv).
	memoryEnv func(memoryMB int, userEnv map[string]string) []string
	// imageSteps, when set, installs dependencies in a function image (ImageSteps).
	imageSteps func(file func(name string) ([]byte, bool)) (beforeCode, afterCode []string)
	// buildArgEnv maps build arguments of a function image to the
	// operator's variables that give them (ImageBuildArgs).
	buildArgEnv map[string]string
	lang        language
}

// ImageSteps returns the Dockerfile lines of a function image that go before
// and after the copy of its code, given its files (file returns one by its
// name in the zip): the dependency install, from the dependency files only
// when it needs nothing else of the zip, so that its layer stays cached while
// only the code changes. None for a runtime whose base image does it, or for
// code without dependencies.
func (d Description) ImageSteps(file func(name string) ([]byte, bool)) (beforeCode, afterCode []string) {
	if d.imageSteps == nil {
		return nil, nil
	}
	return d.imageSteps(file)
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
// of the runtime: BuildArgEntrypoint when the entrypoint is compiled in, and
// the package index settings the operator gives (Python: PIP_INDEX_URL from
// SLESS_PIP_INDEX_URL, ...), passed to the build, never kept in the image.
func (d Description) ImageBuildArgs(entrypoint string) []string {
	var args []string
	if d.EntrypointCompiledIn {
		args = append(args, BuildArgEntrypoint+"="+entrypoint)
	}
	names := make([]string, 0, len(d.buildArgEnv))
	for arg := range d.buildArgEnv {
		names = append(names, arg)
	}
	sort.Strings(names)
	for _, arg := range names {
		if v := os.Getenv(d.buildArgEnv[arg]); v != "" {
			args = append(args, arg+"="+v)
		}
	}
	return args
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
