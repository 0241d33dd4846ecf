package runtimes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/slessio/sless/domain"
)

const pythonWrapper = "sless_wrapper.py"

// pythonEntrypoint is module.function with a dotted module path.
var pythonEntrypoint = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

var python3 = newInterpreter("python3", "-c", "import sys; print(sys.executable)")

// python runs functions on the interpreter's standard library plus what a
// requirements.txt at the root of the zip lists, installed by pip at build
// time into the version's own directory (pythonDeps), never into an
// interpreter's site-packages that other functions share.
type python struct{}

// pythonDeps is the folder below an install directory that holds the
// packages requirements.txt lists; it is on the function's PYTHONPATH.
const pythonDeps = "python-deps"

// The operator's package index for requirements.txt (never the zip's): the
// index pip installs from and one more it also searches.
const (
	EnvPipIndexURL      = "SLESS_PIP_INDEX_URL"
	EnvPipExtraIndexURL = "SLESS_PIP_EXTRA_INDEX_URL"
)

// pipIndexEnv maps pip's own variables to the operator's that give them.
var pipIndexEnv = map[string]string{"PIP_INDEX_URL": EnvPipIndexURL, "PIP_EXTRA_INDEX_URL": EnvPipExtraIndexURL}

func init() {
	register(Description{Name: "python3.11", ReadOnlyRoot: true, lang: python{}, imageSteps: pythonImageSteps, buildArgEnv: pipIndexEnv,
		// setpcap: to empty its bounding set before it switches.
		Pool: true, PoolCaps: []string{"setuid", "setgid", "setpcap"}, startVar: pythonStartVar})
}

// pythonStartVar: the interpreter reads PYTHON* when it starts, but for
// PYTHONPATH, which the wrapper in pool mode applies to sys.path itself.
func pythonStartVar(name string) bool {
	return strings.HasPrefix(name, "PYTHON") && name != "PYTHONPATH"
}

// pipInstall is pip's part of the install a build runs, locally and in an
// image: requirements.txt into target, no prompts or progress bars.
func pipInstall(target string) []string {
	return []string{"install", "--no-input", "--disable-pip-version-check", "--no-warn-script-location", "--progress-bar", "off",
		"--target", target, "-r", "requirements.txt"}
}

// pythonImageDeps is where a function image keeps its installed packages (the
// base image makes it, writable by the function's user, for the build only).
const pythonImageDeps = "/app/python-deps"

// pythonImageSteps installs requirements.txt into the image as the build
// does locally: pip install --target, the index from build arguments. When
// the file names nothing else of the zip, only it is copied first, so the
// install's layer is reused while only the code changes.
func pythonImageSteps(file func(name string) ([]byte, bool)) (beforeCode, afterCode []string) {
	data, ok := file("requirements.txt")
	reqs := parseRequirements(data)
	if !ok || len(reqs) == 0 {
		return nil, nil
	}
	first := "COPY requirements.txt /app/function/requirements.txt"
	if len(requirementRefs(reqs)) > 0 { // local paths, wheels: the install needs the zip
		first = "COPY . /app/function/"
	}
	return []string{first,
			"ARG PIP_INDEX_URL",
			"ARG PIP_EXTRA_INDEX_URL",
			"RUN pip --no-cache-dir " + strings.Join(pipInstall(pythonImageDeps), " ")},
		[]string{"ENV PYTHONPATH=" + pythonImageDeps}
}

func (python) install(dir, entrypoint string) error {
	if !pythonEntrypoint.MatchString(entrypoint) {
		return domain.FieldErrorf("entrypoint", "must be module.function, like handler.handle; got %q", entrypoint)
	}
	return copyWrapper("python3.11", pythonWrapper, filepath.Join(dir, pythonWrapper))
}

// build installs the packages requirements.txt lists with pip install
// --target, run in the function's folder so that local paths (./libs/mylib)
// and a --find-links wheels line resolve inside the zip. pip's own rules
// apply: a file with --hash lines installs in hash-checking mode, one with
// --no-index (and --find-links wheels) reaches no index, also for the build
// backends of local packages, which then come from the vendored wheels too.
func (python) build(ctx context.Context, dir string, opts BuildOptions) (string, error) {
	fnDir := filepath.Join(dir, FunctionDir)
	reqs := requirementLines(fnDir)
	target := filepath.Join(dir, pythonDeps)
	if err := os.RemoveAll(target); err != nil {
		return "", domain.Errorf(domain.EINTERNAL, "clear %s: %v", pythonDeps, err)
	}
	if len(reqs) == 0 {
		return "", nil
	}
	key, _ := depsKey("python3.11", fnDir, "requirements.txt", requirementRefs(reqs))
	if reused, err := opts.reuseDeps(key, target); err != nil || reused {
		return "reused the dependencies installed before from the same requirements.txt (" + key + ")\n", err
	}
	py, err := python3.resolve()
	if err != nil {
		return "", err
	}
	args := append(append([]string{"-m", "pip"}, pipInstall(target)...), "--root-user-action=ignore")
	env := append(opts.toolEnv(filepath.Dir(py)), "PYTHONUNBUFFERED=1") // output as it comes, for followers
	var index []string
	for pip, operator := range pipIndexEnv {
		if v := os.Getenv(operator); v != "" {
			env = append(env, pip+"="+v)
			index = append(index, strings.Fields(v)...)
		}
	}
	slices.Sort(index)
	t := Tool{Name: "pip install", Path: py, Args: args, Dir: fnDir, Env: env,
		Index: index, Internet: os.Getenv(EnvPipIndexURL) == ""} // pip's default index is PyPI
	out, err := opts.run(ctx, t)
	if err != nil {
		_ = os.RemoveAll(target) // no partial dependencies
		return string(out), pipError(ctx, t.Name, out, err, slices.ContainsFunc(reqs, isNoIndex))
	}
	if err := opts.checkDepsSize(t.Name, target); err != nil {
		return string(out), err
	}
	return string(out) + opts.keepDeps(key, target), nil
}

// pipError is installError for pip: its first ERROR line leads, then the
// retries of its HTTP client as one line (it prints one warning a try) and,
// when it could not reach an index or find a package there, where it
// installs from and how to vendor wheels instead; then its output, without
// the retries (the build log keeps them).
func pipError(ctx context.Context, tool string, out []byte, err error, noIndex bool) error {
	berr := buildError(ctx, tool, out, err)
	var exit *exec.ExitError
	if domain.ErrorCode(berr) != domain.EUNPROCESSABLE || !errors.As(err, &exit) { // a step limit says so itself
		return berr
	}
	var lead, index, reason string
	var kept []string
	retries := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case strings.HasPrefix(line, "WARNING: Retrying (") && strings.Contains(line, " after connection broken by "):
			retries++
			reason = retryReason(line)
			continue
		case index == "" && strings.HasPrefix(line, "Looking in indexes: "):
			index = strings.TrimPrefix(line, "Looking in indexes: ") // pip hides passwords
		case lead == "" && strings.HasPrefix(line, "ERROR: "):
			lead = strings.TrimSpace(strings.TrimPrefix(line, "ERROR: "))
		}
		kept = append(kept, line)
	}
	var msg []string
	if lead != "" {
		msg = append(msg, tool+": "+lead)
	}
	if retries > 0 {
		if index == "" {
			index = "https://pypi.org/simple" // pip's default, which it does not announce
		}
		msg = append(msg, fmt.Sprintf("pip retried %d times to reach %s: %s", retries, index, reason))
	}
	notFound := strings.Contains(string(out), "Could not find a version that satisfies the requirement") ||
		strings.Contains(string(out), "No matching distribution found")
	switch {
	case noIndex && notFound:
		msg = append(msg, "sless: with --no-index pip installs only from the wheels the upload vendors (--find-links wheels): "+
			"put the wheel of every requirement, and of what it requires, in wheels/")
	case retries > 0 || notFound:
		msg = append(msg, "sless: pip installs from the package index the operator sets in "+EnvPipIndexURL+" (PyPI when unset); "+
			"if that index cannot be reached or lacks a package, vendor the wheels in the upload: "+
			"pip download -d wheels -r requirements.txt, then start requirements.txt with --no-index --find-links wheels")
	}
	msg = append(msg, tool+" failed:\n"+clip(strings.Join(kept, "\n"), 8<<10))
	return domain.Errorf(domain.EUNPROCESSABLE, "%s", strings.Join(msg, "\n"))
}

// pipRetry finds why urllib3 retried, in the warning pip prints for a try:
// the operating system's words ([Errno 111] Connection refused), an SSL
// error, or a timeout.
var pipRetry = regexp.MustCompile(`\[Errno -?\d+\] ([^'"\])]+)|\[SSL: \w+\] ([^'"\])]+)|([^'"(:]*timed out)`)

// retryReason is what a pip "WARNING: Retrying (...) after connection broken
// by '...'" line says went wrong, in its own words when no better ones.
func retryReason(line string) string {
	if m := pipRetry.FindStringSubmatch(line); m != nil {
		return strings.TrimSpace(m[1] + m[2] + m[3])
	}
	_, by, _ := strings.Cut(line, " after connection broken by ")
	if i := strings.LastIndex(by, "': "); i >= 0 {
		by = by[:i]
	}
	return strings.Trim(by, "'")
}

// isNoIndex says a requirements.txt line keeps pip off every index.
func isNoIndex(line string) bool {
	return line == "--no-index" || strings.HasPrefix(line, "--no-index ")
}

// requirementRefs returns the files and folders of the zip that requirement
// lines point to: other requirement or constraint files, --find-links
// folders, and local paths (./libs/mylib, -e ./pkg, file:./pkg).
func requirementRefs(lines []string) []string {
	var refs []string
	for _, line := range lines {
		fields := strings.Fields(strings.ReplaceAll(line, "=", " "))
		for i, f := range fields {
			switch {
			case (f == "-r" || f == "-c" || f == "--requirement" || f == "--constraint" || f == "-f" || f == "--find-links" ||
				f == "-e" || f == "--editable") && i+1 < len(fields):
				refs = append(refs, strings.TrimPrefix(fields[i+1], "file:"))
			case i == 0 && (strings.HasPrefix(f, ".") || strings.HasPrefix(f, "file:")):
				refs = append(refs, strings.TrimPrefix(f, "file:"))
			}
		}
	}
	return refs
}

func (python) program(dir string) (string, []string, []string, error) {
	wrapper := filepath.Join(dir, pythonWrapper)
	if err := requireFile(wrapper, "install the runtime"); err != nil {
		return "", nil, nil, err
	}
	path, err := python3.resolve()
	if err != nil {
		return "", nil, nil, err
	}
	// -u: output reaches the driver as it is written, and a job's last line survives
	// an exit on timeout.
	env := []string{"PYTHONIOENCODING=utf-8"}
	if info, err := os.Stat(filepath.Join(dir, pythonDeps)); err == nil && info.IsDir() {
		env = append(env, "PYTHONPATH="+filepath.Join(dir, pythonDeps))
	}
	return path, []string{"-u", wrapper}, env, nil
}

// requirementLines returns the lines of the function's requirements.txt
// that say something (comments and blank lines dropped); none without one.
func requirementLines(fnDir string) []string {
	data, err := os.ReadFile(filepath.Join(fnDir, "requirements.txt"))
	if err != nil {
		return nil
	}
	return parseRequirements(data)
}

// parseRequirements returns the lines of a requirements.txt that say
// something.
func parseRequirements(data []byte) []string {
	var reqs []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			reqs = append(reqs, line)
		}
	}
	return reqs
}
