package runtimes

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/slessio/sless/domain"
)

// files holds each runtime's wrapper and base-image Dockerfile, one folder per runtime.
//
// A runtime's folder holds its Dockerfile and its wrapper files, named sless_*.
//
//go:embed */Dockerfile */sless_*
var files embed.FS

// FunctionDir is the folder below an install directory that holds the user's code,
// as /app/function holds it below /app in the images.
const FunctionDir = "function"

// Mode selects how a function process runs.
type Mode string

// The modes of SLESS_MODE.
const (
	ModeServer Mode = "server" // serve HTTP on PORT until stopped
	ModeJob    Mode = "job"    // call the function once with SLESS_EVENT and exit
	ModeCheck  Mode = "check"  // load the entrypoint and exit: 0 when it resolves, 1 with the error
	// ModePool starts without a function and waits on its control socket
	// (EnvControlFD) to be given one (a warm pool: see Specialization).
	ModePool Mode = "pool"
)

// language is what differs between runtimes.
type language interface {
	// install writes the wrapper into dir (user code already in dir/function).
	install(dir, entrypoint string) error
	// build prepares installed code to run: compiles it or installs its dependencies.
	build(ctx context.Context, dir string, opts BuildOptions) (log string, err error)
	// program returns the executable and arguments that run installed, built code, and
	// environment entries of its own.
	program(dir string) (path string, args, env []string, err error)
}

// Runtime is one supported language runtime. Get one from Lookup.
type Runtime struct {
	desc Description
}

// Names returns the names of the supported runtimes, sorted.
func Names() []string { return names() }

// Lookup returns the runtime called name, or an EINVALID error about the field
// "runtime" when there is none.
func Lookup(name string) (Runtime, error) {
	d, ok := registry[name]
	if !ok {
		return Runtime{}, domain.FieldErrorf("runtime", "unknown runtime %q (supported: %s)", name, strings.Join(Names(), ", "))
	}
	return Runtime{desc: d}, nil
}

// Description returns what drivers need to know about the runtime.
func (r Runtime) Description() Description { return r.desc }

// Name returns the runtime's name, e.g. "python3.11".
func (r Runtime) Name() string { return r.desc.Name }

// Install writes the runtime's wrapper next to the user's code, which must already be
// in dir/function. Python and Node.js put their wrapper in dir; Go adds its wrapper
// files and the generated entrypoint binding to dir/function, plus a go.mod when the
// user sent none. Installing again overwrites the same files. It returns EINVALID for
// an entrypoint the runtime cannot call (Go: not an exported identifier) and
// EUNPROCESSABLE when dir/function is missing.
func (r Runtime) Install(dir, entrypoint string) error {
	info, err := os.Stat(filepath.Join(dir, FunctionDir))
	if err != nil || !info.IsDir() {
		return domain.Errorf(domain.EUNPROCESSABLE, "install %s: no folder %s/ with the function's code in %s", r.desc.Name, FunctionDir, dir)
	}
	return r.desc.lang.install(dir, entrypoint)
}

// Build prepares installed code to run and returns the tool's output: Go compiles the
// binary, Node.js runs npm ci (with a lockfile) or npm install when package.json lists dependencies,
// Python runs pip install --target dir/python-deps when requirements.txt lists any
// (no partial folder is left when it fails). The tools run through opts (a sandbox,
// a home for their caches). It returns EUNPROCESSABLE with the compiler's, npm's or
// pip's output when that fails (npm's and pip's error line first; pip's retries to
// reach an index folded into one line, and where it installs from when it could not
// find a package), and EUNAVAILABLE when the tool is missing or ctx ends first.
func (r Runtime) Build(ctx context.Context, dir string, opts BuildOptions) (string, error) {
	return r.desc.lang.build(ctx, dir, opts)
}

// Spec is how to start a function process.
type Spec struct {
	Path string   // absolute path of the program
	Args []string // arguments after the program name
	Dir  string   // working directory: the function's code
	// Env is the process's whole base environment, not the caller's: PATH, LANG,
	// SLESS_MODE, and (server mode) SLESS_HOST=127.0.0.1. The caller appends PORT,
	// SLESS_ENTRYPOINT, SLESS_EVENT, SLESS_TIMEOUT_SEC and the function's variables.
	Env []string
}

// Cmd returns an exec.Cmd for the spec with env appended to Spec.Env.
func (s Spec) Cmd(ctx context.Context, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.Path, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = append(append([]string(nil), s.Env...), env...)
	return cmd
}

// Command returns how to run the installed (and, for Go, built) function in dir as a
// local process in the given mode. Interpreters are resolved to real paths once per
// process. It returns EINVALID for an unknown mode, EUNPROCESSABLE when dir was not
// installed or built, and EUNAVAILABLE when the interpreter is missing.
func (r Runtime) Command(dir string, mode Mode) (Spec, error) {
	if mode != ModeServer && mode != ModeJob && mode != ModeCheck && (mode != ModePool || !r.desc.Pool) {
		return Spec{}, domain.Errorf(domain.EINVALID, "mode must be %q, %q or %q (or %q for a runtime with a pool mode), got %q",
			ModeServer, ModeJob, ModeCheck, ModePool, mode)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Spec{}, domain.Errorf(domain.EUNPROCESSABLE, "resolve %s: %v", dir, err)
	}
	path, args, env, err := r.desc.lang.program(dir)
	if err != nil {
		return Spec{}, err
	}
	base := []string{
		"PATH=" + filepath.Dir(path) + string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		EnvMode + "=" + string(mode),
	}
	if mode == ModeServer || mode == ModePool {
		base = append(base, EnvHost+"=127.0.0.1") // local processes are reached through the proxy only
	}
	return Spec{Path: path, Args: args, Dir: filepath.Join(dir, FunctionDir), Env: append(base, env...)}, nil
}

// ImageContext returns the Docker build context of the runtime's base image: its
// Dockerfile and wrapper files.
func (r Runtime) ImageContext() fs.FS {
	sub, err := fs.Sub(files, r.desc.Name)
	if err != nil {
		panic(err) // unreachable: every runtime has its embedded folder
	}
	return sub
}

// copyWrapper copies the embedded file name of runtime into dst.
func copyWrapper(runtime, name, dst string) error {
	data, err := files.ReadFile(runtime + "/" + name)
	if err != nil {
		return fmt.Errorf("read embedded %s/%s: %w", runtime, name, err)
	}
	return writeFile(dst, data)
}

func writeFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return domain.Errorf(domain.EUNPROCESSABLE, "write %s: %v", filepath.Base(path), err)
	}
	return nil
}

// requireFile returns EUNPROCESSABLE when path, which an earlier step makes, is missing.
func requireFile(path, step string) error {
	if _, err := os.Stat(path); err != nil {
		return domain.Errorf(domain.EUNPROCESSABLE, "%s is missing: %s first", filepath.Base(path), step)
	}
	return nil
}

// interpreter resolves a command on PATH to the real executable: python3
// on PATH may be a pyenv shim that costs ~100 ms per start. A path found is
// kept; a failure is not (the interpreter may be installed, or the lookup
// was interrupted), so the next call looks again.
type interpreter struct {
	resolve func() (string, error)
}

func newInterpreter(name string, args ...string) interpreter {
	var mu sync.Mutex
	var found string
	return interpreter{resolve: func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if found != "" {
			return found, nil
		}
		cmd := exec.Command(name, args...)
		cmd.SysProcAttr = ownGroup()
		out, err := cmd.Output()
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				err = fmt.Errorf("%v: %s", err, strings.TrimSpace(string(exit.Stderr)))
			}
			return "", domain.Errorf(domain.EUNAVAILABLE, "%s is not available: %v", name, err)
		}
		path := strings.TrimSpace(string(out))
		if !filepath.IsAbs(path) {
			return "", domain.Errorf(domain.EUNAVAILABLE, "%s reported no absolute executable path: %q", name, path)
		}
		found = path
		return path, nil
	}}
}

// clip keeps the first max bytes of tool output for an error message.
func clip(out string, max int) string {
	out = strings.TrimSpace(out)
	if len(out) <= max {
		return out
	}
	return out[:max] + "\n[truncated]"
}

// installError is buildError for a package manager, with its own first
// error line (the first one starting with one of prefixes, which go) ahead
// of the output: pip's "ERROR: ...", npm's "npm error ...".
func installError(ctx context.Context, tool string, out []byte, err error, prefixes ...string) error {
	berr := buildError(ctx, tool, out, err)
	if domain.ErrorCode(berr) != domain.EUNPROCESSABLE {
		return berr
	}
	for _, line := range strings.Split(string(out), "\n") {
		for _, p := range prefixes {
			if rest, ok := strings.CutPrefix(line, p); ok {
				return domain.Errorf(domain.EUNPROCESSABLE, "%s: %s\n%s", tool, strings.TrimSpace(rest), domain.ErrorMessage(berr))
			}
		}
	}
	return berr
}

// buildError turns a failed build command into a coded error carrying its output.
func buildError(ctx context.Context, tool string, out []byte, err error) error {
	var over *stepTimeout
	if errors.As(err, &over) {
		return domain.Errorf(domain.EUNPROCESSABLE, "%s; its output so far:\n%s", over.Error(), clip(string(out), 8<<10))
	}
	if ctx.Err() != nil {
		return domain.Errorf(domain.EUNAVAILABLE, "%s did not finish: %v", tool, ctx.Err())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return domain.Errorf(domain.EUNAVAILABLE, "cannot run %s: %v", tool, err)
	}
	return domain.Errorf(domain.EUNPROCESSABLE, "%s failed:\n%s", tool, clip(string(out), 8<<10))
}
