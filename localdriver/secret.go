package localdriver

import (
	"context"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/localdriver/sandbox"
)

var _ driver.SecretOpenerUser = (*Driver)(nil)

// UseSecrets implements driver.SecretOpenerUser: o opens the secrets of
// every instance and run started from now on (see "Secrets" in the package
// doc). Without one, a version that uses secrets does not start.
func (d *Driver) UseSecrets(o driver.SecretOpener) {
	d.mu.Lock()
	d.secrets = o
	d.mu.Unlock()
}

// openSecrets opens the secrets of w for one process, anew each time: a
// version whose secret version was deleted starts no more processes, nor
// restarts one. Errors: driver.OpenSecrets' (EUNPROCESSABLE naming the
// secret, EUNAVAILABLE), EUNPROCESSABLE for secret_files without a sandbox.
func (d *Driver) openSecrets(ctx context.Context, w driver.Workload) (driver.SecretValues, error) {
	// Without a sandbox there is no file system of the function's own to
	// put them on: any other place could be read by every function (all
	// run as the platform's user) or would be a file on a disk.
	if len(w.Config.SecretFiles) > 0 && d.sb.Mode() == sandbox.ModeNone {
		return driver.SecretValues{}, domain.Errorf(domain.EUNPROCESSABLE,
			"version %d reads secrets as files (secret_files), which need the sandbox; this platform runs functions without one "+
				"(sless dev without bubblewrap, or --insecure-no-sandbox): install bubblewrap, or use secrets as environment variables (secrets)",
			w.Version)
	}
	d.mu.Lock()
	o := d.secrets
	d.mu.Unlock()
	return driver.OpenSecrets(ctx, o, w)
}
