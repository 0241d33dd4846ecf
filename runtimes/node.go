package runtimes

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/slessio/sless/domain"
)

const nodeWrapper = "sless_wrapper.js"

// nodeEntrypoint is module.function; the module is a path below the function's folder.
var nodeEntrypoint = regexp.MustCompile(`^[A-Za-z0-9_$][A-Za-z0-9_$.\-/]*\.[A-Za-z_$][A-Za-z0-9_$]*$`)

var nodejs = newInterpreter("node", "-p", "process.execPath")

// node installs npm dependencies only when package.json declares some, so that the
// common dependency-free function builds without touching a registry: npm ci when
// the zip has a package-lock.json, else npm install, production dependencies only,
// without their install scripts unless the operator allows them.
type node struct{}

func init() {
	register(Description{Name: "nodejs20", ReadOnlyRoot: true, memoryEnv: nodeMemoryEnv, lang: node{}, imageSteps: nodeImageSteps,
		buildArgEnv: map[string]string{"npm_config_registry": EnvNpmRegistry},
		Pool:        true, PoolCaps: []string{"setuid", "setgid"}, startVar: nodeStartVar})
}

// nodeImageSteps installs package.json's dependencies into the image as the
// build does locally (npm ci with a lockfile, production only, no install
// scripts unless the operator allows them), before the copy of the code;
// only package.json and the lockfile are copied first unless a dependency
// is a path inside the zip (file:, link:), so the install's layer is reused
// while only the code changes.
func nodeImageSteps(file func(name string) ([]byte, bool)) (beforeCode, afterCode []string) {
	data, ok := file("package.json")
	if !ok {
		return nil, nil
	}
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if json.Unmarshal(data, &manifest) != nil || len(manifest.Dependencies) == 0 {
		return nil, nil // a bad package.json fails the build of the code itself
	}
	first := "COPY --chown=10001:10001 package.json /app/function/"
	_, lock := file("package-lock.json")
	if lock {
		first = "COPY --chown=10001:10001 package.json package-lock.json /app/function/"
	}
	for _, spec := range manifest.Dependencies {
		if strings.HasPrefix(spec, "file:") || strings.HasPrefix(spec, "link:") || strings.HasPrefix(spec, ".") {
			first = "COPY --chown=10001:10001 . /app/function/"
		}
	}
	_, args := npmInstall(lock)
	return []string{first, "ARG npm_config_registry", "RUN npm " + strings.Join(args, " ")}, nil
}

// npmInstall is the install a build runs, locally and in an image: npm ci
// with a lockfile, else npm install; production dependencies only; their
// install scripts only when the operator allows them.
func npmInstall(lockfile bool) (name string, args []string) {
	name, args = "npm install", []string{"install"}
	if lockfile {
		name, args = "npm ci", []string{"ci"} // exactly the lockfile's versions and integrity hashes
	}
	args = append(args, "--omit=dev", "--no-audit", "--no-fund", "--no-update-notifier")
	if os.Getenv(EnvNpmAllowScripts) != "true" {
		args = append(args, "--ignore-scripts")
	}
	return name, args
}

// nodeStartVar: Node.js reads NODE_OPTIONS (the memory knob), NODE_PATH and
// its other NODE_* variables, and libuv its UV_*, when it starts; NODE_ENV
// is the libraries' to read.
func nodeStartVar(name string) bool {
	return strings.HasPrefix(name, "NODE_") && name != "NODE_ENV" || strings.HasPrefix(name, "UV_")
}

// nodeMemoryEnv sets V8's heap limit (its garbage collector works harder near
// it, then the process dies with "heap out of memory"), ahead of the user's
// own NODE_OPTIONS.
func nodeMemoryEnv(memoryMB int, userEnv map[string]string) []string {
	opts := "--max-old-space-size=" + strconv.Itoa(memoryMB)
	if user := strings.TrimSpace(userEnv["NODE_OPTIONS"]); user != "" {
		opts += " " + user
	}
	return []string{"NODE_OPTIONS=" + opts}
}

func (node) install(dir, entrypoint string) error {
	if !nodeEntrypoint.MatchString(entrypoint) || strings.Contains(entrypoint, "..") {
		return domain.FieldErrorf("entrypoint", "must be module.function, like handler.handle; got %q", entrypoint)
	}
	return copyWrapper("nodejs20", nodeWrapper, filepath.Join(dir, nodeWrapper))
}

func (node) build(ctx context.Context, dir string, opts BuildOptions) (string, error) {
	fnDir := filepath.Join(dir, FunctionDir)
	data, err := os.ReadFile(filepath.Join(fnDir, "package.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", domain.Errorf(domain.EUNPROCESSABLE, "read package.json: %v", err)
	}
	var manifest struct {
		Dependencies map[string]any `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		return "", domain.Errorf(domain.EUNPROCESSABLE, "package.json: %v", err)
	}
	if len(manifest.Dependencies) == 0 {
		return "", nil
	}
	modules := filepath.Join(fnDir, "node_modules")
	key := nodeDepsKey(fnDir, manifest.Dependencies)
	if reused, err := opts.reuseDeps(key, modules); err != nil || reused {
		return "reused the dependencies installed before from the same package.json (" + key + ")\n", err
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", domain.Errorf(domain.EUNAVAILABLE, "npm is not available: %v", err)
	}
	nodePath, err := nodejs.resolve()
	if err != nil {
		return "", err
	}
	npm = realPath(npm)
	_, err = os.Stat(filepath.Join(fnDir, "package-lock.json"))
	name, args := npmInstall(err == nil)
	registry, configured := npmRegistry()
	t := Tool{Name: name, Path: npm, Args: append(args, "--registry="+registry), Dir: fnDir,
		Env: opts.toolEnv(filepath.Dir(nodePath), filepath.Dir(npm)), Index: []string{registry}, Internet: !configured}
	out, err := opts.run(ctx, t)
	if err != nil {
		_ = os.RemoveAll(modules) // no partial dependencies
		return string(out), installError(ctx, t.Name, out, err, "npm error ", "npm ERR! ")
	}
	if err := opts.checkDepsSize(t.Name, modules); err != nil {
		return string(out), err
	}
	return string(out) + opts.keepDeps(key, modules), nil
}

// nodeDepsKey is the digest node_modules is kept under: package.json, the
// lockfile, the file: dependencies of the zip, and whether install scripts
// ran; "" when the zip brings a node_modules of its own (the user's, never
// replaced).
func nodeDepsKey(fnDir string, deps map[string]any) string {
	if _, err := os.Lstat(filepath.Join(fnDir, "node_modules")); err == nil {
		return ""
	}
	var refs []string
	if _, err := os.Stat(filepath.Join(fnDir, "package-lock.json")); err == nil {
		refs = append(refs, "package-lock.json")
	}
	for _, spec := range deps {
		if s, ok := spec.(string); ok && strings.HasPrefix(s, "file:") {
			refs = append(refs, strings.TrimPrefix(s, "file:"))
		}
	}
	key, _ := depsKey("nodejs20 scripts="+os.Getenv(EnvNpmAllowScripts), fnDir, "package.json", refs)
	return key
}

// The operator's npm settings (never the zip's .npmrc): the registry
// dependencies come from, and whether their install scripts may run.
const (
	EnvNpmRegistry     = "SLESS_NPM_REGISTRY"
	EnvNpmAllowScripts = "SLESS_NPM_ALLOW_SCRIPTS"
)

// npmRegistry is the registry npm installs from: the operator's
// SLESS_NPM_REGISTRY (or npm_config_registry), else npm's public one, given
// on the command line so that an .npmrc in the zip cannot change it;
// configured says it is the operator's.
func npmRegistry() (registry string, configured bool) {
	for _, name := range []string{EnvNpmRegistry, "npm_config_registry", "NPM_CONFIG_REGISTRY"} {
		if v := os.Getenv(name); v != "" {
			return v, true
		}
	}
	return "https://registry.npmjs.org/", false
}

func (node) program(dir string) (string, []string, []string, error) {
	wrapper := filepath.Join(dir, nodeWrapper)
	if err := requireFile(wrapper, "install the runtime"); err != nil {
		return "", nil, nil, err
	}
	path, err := nodejs.resolve()
	if err != nil {
		return "", nil, nil, err
	}
	return path, []string{wrapper}, []string{"NODE_ENV=production"}, nil
}
