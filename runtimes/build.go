package runtimes

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/slessio/sless/domain"
)

// Tool is one program a build runs: the Go compiler, npm, or the wrapper
// loading the entrypoint. Paths are the host's; a sandboxing Runner maps them.
type Tool struct {
	Name string   // for messages: "go build", "npm install", ...
	Path string   // absolute path of the program
	Args []string // arguments after the program name
	Dir  string   // working directory
	Env  []string // the whole environment
	// Index are the package indexes the operator configured that the tool
	// downloads from (URLs: PIP_INDEX_URL, the npm registry, GOPROXY's
	// entries), and Internet says it also downloads from the internet (a
	// tool's default public index, Go's "direct"): what a sandboxed step
	// may reach. Neither: the step needs no network (the entrypoint check).
	Index    []string
	Internet bool
}

// Runner runs a build tool and returns its combined output. The tool's own
// failure is an error wrapping *exec.ExitError; any other error means it
// could not run. LocalRunner runs it as a plain process.
type Runner func(ctx context.Context, t Tool) ([]byte, error)

// LocalRunner runs a tool as a plain child process of this one.
func LocalRunner(ctx context.Context, t Tool) ([]byte, error) {
	cmd := exec.CommandContext(ctx, t.Path, t.Args...)
	cmd.Dir, cmd.Env = t.Dir, t.Env
	return cmd.CombinedOutput()
}

// DefaultCheckTimeout bounds the load check of an entrypoint.
const DefaultCheckTimeout = time.Minute

// BuildOptions says how Build and Check run their tools.
type BuildOptions struct {
	// Runner runs each tool; nil is LocalRunner.
	Runner Runner
	// Home, when set, is the HOME of the build tools and holds their caches
	// (Go's build and module caches, npm's), and the tools get a clean
	// environment: PATH, HOME, LANG, TMPDIR and the operator's settings for
	// reaching registries (GOPROXY, GOSUMDB, GOPRIVATE, GOFLAGS,
	// npm_config_registry, HTTP(S)_PROXY, ...; see passedThrough). Empty:
	// the tools inherit this process's environment and caches.
	Home string
	// Env is what Check adds to the runtime's environment: the function's
	// variables and SLESS_ENTRYPOINT, as the function's processes get them.
	Env []string
	// CheckTimeout bounds Check (DefaultCheckTimeout).
	CheckTimeout time.Duration
	// StepTimeout bounds each build step, a compile or a dependency install
	// (DefaultStepTimeout); one that runs longer fails the build.
	StepTimeout time.Duration
	// MaxDepsBytes bounds the dependencies a step installs into the version
	// (python-deps, node_modules; DefaultMaxDepsBytes); more fails the build.
	MaxDepsBytes int64
	// DepsCache, when set, is a folder (of one tenant: its contents reach
	// every version built with it) where installed dependencies (Python's
	// python-deps, Node.js's node_modules) are kept by the digest of the
	// files they came from, and copied from by the next build with the same
	// ones instead of installing again.
	DepsCache string
	// MaxKeptDeps bounds the sets of dependencies DepsCache keeps, the least
	// recently used going first (DefaultMaxKeptDeps).
	MaxKeptDeps int
}

// The limits of a build step when BuildOptions leaves them out.
const (
	DefaultStepTimeout  = 10 * time.Minute
	DefaultMaxDepsBytes = 512 << 20
)

// stepTimeout says that a build step ran out of its own time (not its caller's).
type stepTimeout struct {
	tool  string
	limit time.Duration
}

func (e *stepTimeout) Error() string {
	return fmt.Sprintf("%s did not finish within the build step limit of %s", e.tool, e.limit)
}

// run runs tool t within the step limit: past it, the tool is killed and the
// error is a *stepTimeout.
func (o BuildOptions) run(ctx context.Context, t Tool) ([]byte, error) {
	limit := o.StepTimeout
	if limit <= 0 {
		limit = DefaultStepTimeout
	}
	over := &stepTimeout{tool: t.Name, limit: limit}
	sctx, cancel := context.WithTimeoutCause(ctx, limit, over)
	defer cancel()
	var out []byte
	var err error
	if o.Runner == nil {
		out, err = LocalRunner(sctx, t)
	} else {
		out, err = o.Runner(sctx, t)
	}
	if err != nil && ctx.Err() == nil && context.Cause(sctx) == over {
		return out, over
	}
	return out, err
}

// checkDepsSize fails when the dependencies installed in dir take more than
// the limit, removing them: no partial or oversized folder stays.
func (o BuildOptions) checkDepsSize(tool, dir string) error {
	limit := o.MaxDepsBytes
	if limit <= 0 {
		limit = DefaultMaxDepsBytes
	}
	var size int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			size += info.Size()
		}
		return err
	})
	if err != nil {
		return domain.Errorf(domain.EINTERNAL, "measure %s: %v", dir, err)
	}
	if size <= limit {
		return nil
	}
	_ = os.RemoveAll(dir)
	return domain.Errorf(domain.EUNPROCESSABLE, "%s installed %s of dependencies, more than the limit of %s",
		tool, byteSize(size), byteSize(limit))
}

// byteSize writes n bytes in MiB, or in bytes below one MiB.
func byteSize(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// passedThrough are the operator's variables that build tools need to reach
// their registries; with BuildOptions.Home set nothing else of this
// process's environment reaches a build.
var passedThrough = []string{
	"GOPROXY", "GOSUMDB", "GONOSUMDB", "GONOSUMCHECK", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOFLAGS",
	"GOAMD64", "GOARM64", "CGO_ENABLED",
	"npm_config_registry", "NPM_CONFIG_REGISTRY",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
}

// toolEnv is the environment of a build tool whose programs live in bins:
// the caller's (no Home) or a clean one around Home.
func (o BuildOptions) toolEnv(bins ...string) []string {
	if o.Home == "" {
		return os.Environ()
	}
	path := append(bins, "/usr/local/bin", "/usr/bin", "/bin")
	env := []string{"PATH=" + strings.Join(path, string(os.PathListSeparator)), "HOME=" + o.Home, "LANG=C.UTF-8", "TMPDIR=/tmp"}
	for _, name := range passedThrough {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// Check loads the installed, built function in dir the way its processes
// will (Python: imports the module, compiling it; Node.js: requires it; Go:
// runs the package's init, Build having compiled the entrypoint in) and
// fails when the entrypoint does not resolve: a missing module or function,
// a syntax error, an exception at load. It returns the check's output, and
// EUNPROCESSABLE with the load error when it fails (for a module the
// entrypoint names that is not in the upload, which files it would be and
// the upload's top-level files; for a package the code imports that is not
// installed, where to list it), EUNAVAILABLE when it could not run.
func (r Runtime) Check(ctx context.Context, dir string, opts BuildOptions) (string, error) {
	spec, err := r.Command(dir, ModeCheck)
	if err != nil {
		return "", err
	}
	timeout := opts.CheckTimeout
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := Tool{Name: "loading the entrypoint", Path: spec.Path, Args: spec.Args, Dir: spec.Dir, Env: append(spec.Env, opts.Env...)}
	out, err := opts.run(ctx, t)
	if err != nil {
		if ctx.Err() != nil && ctx.Err() == context.DeadlineExceeded {
			return string(out), domain.Errorf(domain.EUNPROCESSABLE, "loading the entrypoint did not finish within %s: the module blocks at import", timeout)
		}
		berr := buildError(ctx, t.Name, out, err)
		if domain.ErrorCode(berr) != domain.EUNPROCESSABLE {
			return string(out), berr
		}
		if m := moduleMissing.FindStringSubmatch(string(out)); m != nil {
			return string(out), domain.Errorf(domain.EUNPROCESSABLE, "the entrypoint %s names %s, which is not in the upload; %s",
				m[1], m[2], topLevelFiles(filepath.Join(dir, FunctionDir), nil))
		}
		if hint := missingModuleHint(string(out), filepath.Join(dir, FunctionDir)); hint != "" {
			return string(out), domain.Errorf(domain.EUNPROCESSABLE, "%s\n%s", domain.ErrorMessage(berr), hint)
		}
		return string(out), berr
	}
	return string(out), nil
}

// moduleMissing is the line a wrapper's load ends with when the module the
// entrypoint names is not there at all (as opposed to a module it imports):
// the entrypoint, and the files that would have been the module.
var moduleMissing = regexp.MustCompile(`(?m)^sless: cannot load (\S+): (.+) is not in the function's folder$`)

// topLevelFiles lists the files and folders (with a slash) at the top of the
// user's code in fnDir, for a message about a file that is not there. It
// leaves out what builds and loads write there (node_modules, __pycache__)
// and the files skip says the runtime added.
func topLevelFiles(fnDir string, skip func(name string) bool) string {
	entries, _ := os.ReadDir(fnDir)
	var names []string
	for _, e := range entries {
		if e.Name() == "__pycache__" || e.Name() == "node_modules" || skip != nil && skip(e.Name()) {
			continue
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		names = append(names, name)
	}
	const most = 20
	switch {
	case len(names) == 0:
		return "the upload has no files"
	case len(names) > most:
		return fmt.Sprintf("its top-level files are: %s and %d more", strings.Join(names[:most], ", "), len(names)-most)
	}
	return "its top-level files are: " + strings.Join(names, ", ")
}

// missingModuleHint says what to do about a module the user's code in fnDir
// imports that is neither in the upload nor installed (Python), or a package
// it requires that is not installed (Node.js), "" for other failures.
func missingModuleHint(out, fnDir string) string {
	if pkg := nodeMissingPackage.FindStringSubmatch(out); pkg != nil {
		return fmt.Sprintf("sless: the package %q is not installed: list it in package.json's dependencies", pkg[1])
	}
	_, rest, ok := strings.Cut(out, "ModuleNotFoundError: No module named '")
	if !ok {
		return ""
	}
	full, _, _ := strings.Cut(rest, "'")
	module, _, _ := strings.Cut(full, ".")
	if inUpload(fnDir, module) { // a module of the upload's own package
		path := strings.ReplaceAll(full, ".", "/")
		return fmt.Sprintf("sless: the module %q is not in the upload: %s.py (or a %s/ package) is missing", full, path, path)
	}
	hint := fmt.Sprintf("sless: the module %q is not installed: list its package in requirements.txt", module)
	if module == "psycopg2" {
		hint += " (psycopg2-binary); the Kubernetes base image ships it, but local builds use the machine's python3, which lacks it"
	}
	return hint
}

// inUpload says the upload has the top-level Python module or package name.
func inUpload(fnDir, name string) bool {
	for _, file := range []string{name + ".py", name} {
		if _, err := os.Stat(filepath.Join(fnDir, file)); err == nil {
			return true
		}
	}
	return false
}

// nodeMissingPackage is Node.js's error for a package (not a relative or
// absolute path) that no node_modules holds: its name, with the scope.
var nodeMissingPackage = regexp.MustCompile(`(?m)^sless: cannot load \S+: Error: Cannot find module '((?:@[^/.'][^/']*/)?[^/.'][^/']*)[^']*'$`)

// realPath resolves a tool found on PATH through its links (npm is a link
// into node's lib folder), so a sandbox can bind the folder it lives in.
func realPath(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return path
}
