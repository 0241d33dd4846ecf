package localdriver

import (
	"context"
	"errors"
	"strconv"
	"syscall"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
)

// Each control plane keeps its builds in its own data dir, so a version
// built by another one (two replicas on one database) is not on this
// server. Like a node pulling an image it does not have, the driver then
// builds it here from the stored code, found through its BuildSource
// (Options.Source, or the workers' through UseBuildSource): builds are
// deterministic and a built version is built once (Build's manifest).

// UseBuildSource implements driver.BuildSourceUser: s is where Deploy and
// Run find the stored code of a version whose build is not on this server.
func (d *Driver) UseBuildSource(s driver.BuildSource) {
	d.mu.Lock()
	d.source = s
	d.mu.Unlock()
}

func (d *Driver) buildSource() driver.BuildSource {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.source
}

// missingBuild is buildDir's error for version n of k, whose build is not
// on this server; runnableDir builds it, or says so without a path of the host.
type missingBuild struct {
	k fnKey
	n int
}

func (e *missingBuild) Error() string {
	return "the build of version " + strconv.Itoa(e.n) + " of " + e.k.String() + " is not on this server"
}

// runnableDir is buildDir, building the version first when its build is
// not on this server and a BuildSource says how. Errors: buildDir's; the
// BuildSource's (ENOTFOUND, EUNAVAILABLE: a rollout retries them);
// EUNPROCESSABLE when the version no longer builds; Build's.
func (d *Driver) runnableDir(ctx context.Context, w driver.Workload) (fnKey, string, error) {
	k, dir, err := d.buildDir(w)
	var missing *missingBuild
	if !errors.As(err, &missing) {
		return k, dir, err
	}
	src := d.buildSource()
	if src == nil {
		return fnKey{}, "", domain.Errorf(domain.EUNPROCESSABLE, "the build of version %d of %q is not on this server, which has no code store to build it from", missing.n, missing.k.fn)
	}
	spec, err := src.BuildSpec(ctx, missing.k.ns, missing.k.fn, missing.n)
	if err != nil {
		return fnKey{}, "", err
	}
	d.opts.Logger.Info("localdriver: building a version whose build is not on this server", "function", missing.k.String(), "version", missing.n)
	res, err := d.Build(ctx, spec)
	if err != nil {
		return fnKey{}, "", err
	}
	if res.Failed {
		return fnKey{}, "", domain.Errorf(domain.EUNPROCESSABLE, "version %d of %q could not be built again on this server: %s", missing.n, missing.k.fn, res.Message)
	}
	return d.buildDir(w)
}

// hostError turns an error of this machine's file system into one that
// names no path of the host, for messages the function's owner reads: a
// full disk (ENOSPC, EDQUOT) is EUNAVAILABLE driver.DiskFullMessage (the
// worker retries), anything else EINTERNAL "<what>: <errno text>". The
// whole error goes to the driver's log.
func (d *Driver) hostError(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		d.opts.Logger.Warn("localdriver: "+what, "error", err)
		return domain.Errorf(domain.EUNAVAILABLE, "%s", driver.DiskFullMessage)
	}
	var de *domain.Error
	if errors.As(err, &de) { // already says what it means
		return err
	}
	d.opts.Logger.Warn("localdriver: "+what, "error", err)
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return domain.Errorf(domain.EINTERNAL, "%s: %s", what, errno.Error())
	}
	return domain.Errorf(domain.EINTERNAL, "%s failed", what)
}
