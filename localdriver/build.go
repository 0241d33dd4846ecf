package localdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/runtimes"
)

// manifestFile marks a finished build in its version directory: a build
// directory without it is not used.
const manifestFile = "sless-build.json"

// manifest records what a build directory holds, so that building the same
// version again returns the same result without work.
type manifest struct {
	Runtime    string    `json:"runtime"`
	Entrypoint string    `json:"entrypoint"`
	Digest     string    `json:"digest"`
	Log        string    `json:"log"`
	BuiltAt    time.Time `json:"built_at"`
}

func readManifest(dir string) (manifest, error) {
	var m manifest
	data, err := os.ReadFile(filepath.Join(dir, manifestFile))
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(data, &m)
}

// maxZipBytes bounds the download of a stored zip: uploads are capped at
// 32 MiB, so anything larger is not one of ours.
const maxZipBytes = 64 << 20

// Build unpacks the version's zip into a fresh directory, installs the
// runtime wrapper and builds it (Go: go build with the machine's shared build
// cache; Node.js: npm ci (with a lockfile) or npm install when package.json has dependencies;
// Python: pip install --target of a requirements.txt into the version's own
// folder). The directory becomes Dir/builds/<ns>/<fn>/v<N>
// only when the build succeeded, so building a built version again returns
// the same Image and Log at once. Failures of the user's code are a result
// with Failed set; errors are EINVALID (bad names), EUNAVAILABLE (code store,
// tools, ctx, shutdown, a full disk: driver.DiskFullMessage) or EINTERNAL
// (other disk errors); none names a path of the host (hostError).
func (d *Driver) Build(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
	k, err := checkKey(b.Namespace, b.Function)
	if err != nil {
		return driver.BuildResult{}, err
	}
	if b.Version <= 0 {
		return driver.BuildResult{}, domain.Errorf(domain.EINVALID, "build %s: version must be positive, got %d", k, b.Version)
	}
	if _, err := d.function(k); err != nil { // refuses after Close
		return driver.BuildResult{}, err
	}
	dir := d.versionDir(k, b.Version)
	defer d.lockBuild(dir)()
	image := imageName(k, b.Version)

	if m, err := readManifest(dir); err == nil && m.Digest == b.Digest && m.Runtime == string(b.Config.Runtime) && m.Entrypoint == b.Config.Entrypoint {
		return driver.BuildResult{Image: image, Log: m.Log}, nil
	}
	rt, err := runtimes.Lookup(string(b.Config.Runtime))
	if err != nil {
		return failed("", domain.ErrorMessage(err)), nil
	}
	zipData, err := fetch(ctx, b.Code, b.ZipKey)
	if err != nil {
		return driver.BuildResult{}, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return driver.BuildResult{}, d.hostError("create the function's build folder", err)
	}
	// A crash in an earlier attempt may have left a partial directory behind.
	stale, _ := filepath.Glob(dir + ".tmp-*")
	for _, s := range stale {
		_ = os.RemoveAll(s)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return driver.BuildResult{}, d.hostError("create the build directory", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed

	if err := unzip(zipData, filepath.Join(tmp, runtimes.FunctionDir)); err != nil {
		if domain.ErrorCode(err) == domain.EINVALID {
			return failed("", domain.ErrorMessage(err)), nil
		}
		return driver.BuildResult{}, d.hostError("unpack the code", err)
	}
	if err := rt.Install(tmp, b.Config.Entrypoint); err != nil {
		if code := domain.ErrorCode(err); code == domain.EINVALID || code == domain.EUNPROCESSABLE {
			return failed("", domain.ErrorMessage(err)), nil
		}
		return driver.BuildResult{}, d.hostError("install the "+rt.Name()+" runtime", err)
	}
	start := time.Now()
	// The tenant's build steps run as its uid, on a directory it owns; then
	// the platform takes the directory back, read-only to the tenant.
	if err := d.handOver(k, tmp); err != nil {
		return driver.BuildResult{}, d.hostError("hand the build directory over", err)
	}
	env := processEnv(driver.Workload{Config: b.Config}, nil) // a build gets no secrets
	opts := d.buildOptions(k, tmp, env, b.Progress)
	log, err := rt.Build(ctx, tmp, opts)
	if err == nil {
		var checkLog string
		checkLog, err = rt.Check(ctx, tmp, opts)
		log += checkLog
	}
	if err != nil {
		if domain.ErrorCode(err) == domain.EUNPROCESSABLE {
			return failed(log, domain.ErrorMessage(err)), nil
		}
		return driver.BuildResult{}, d.hostError("build", err)
	}
	if err := d.takeBack(tmp); err != nil {
		return driver.BuildResult{}, d.hostError("take the build directory back", err)
	}
	d.opts.Logger.Info("localdriver: built", "function", k.String(), "version", b.Version,
		"runtime", rt.Name(), "duration", time.Since(start).Round(time.Millisecond))

	m := manifest{Runtime: rt.Name(), Entrypoint: b.Config.Entrypoint, Digest: b.Digest, Log: log, BuiltAt: time.Now().UTC()}
	data, err := json.Marshal(m)
	if err != nil {
		return driver.BuildResult{}, fmt.Errorf("encode build manifest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, manifestFile), data, 0o644); err != nil {
		return driver.BuildResult{}, d.hostError("write the build manifest", err)
	}
	// An older directory for this version (other code under a reused
	// function name) is replaced.
	if err := os.RemoveAll(dir); err != nil {
		return driver.BuildResult{}, d.hostError("remove the old build", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return driver.BuildResult{}, d.hostError("move the build into place", err)
	}
	return driver.BuildResult{Image: image, Log: log}, nil
}

func failed(log, message string) driver.BuildResult {
	if log == "" {
		log = message
	}
	return driver.BuildResult{Failed: true, Message: message, Log: log}
}

// fetch reads a stored zip; a missing object or an unreachable store is
// EUNAVAILABLE (the worker retries), as is a nil fetcher.
func fetch(ctx context.Context, code driver.CodeFetcher, key string) ([]byte, error) {
	if code == nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "build: no code store to read %s from", key)
	}
	rc, err := code.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("fetch code %s: %w", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxZipBytes+1))
	if err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "fetch code %s: %v", key, err)
	}
	if len(data) > maxZipBytes {
		return nil, domain.Errorf(domain.ETOOLARGE, "code %s is larger than %d MiB", key, maxZipBytes>>20)
	}
	return data, nil
}
