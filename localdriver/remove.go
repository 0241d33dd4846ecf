package localdriver

import (
	"context"
	"fmt"
	"os"
)

// Remove stops every process of a function (its server, versions still
// draining, running jobs) and deletes its builds, Dir/builds/<ns>/<fn>/.
// Removing a function the driver never saw is not an error. Errors: EINVALID
// (names), EUNAVAILABLE after Close, EINTERNAL when the files cannot be deleted.
func (d *Driver) Remove(ctx context.Context, namespace, function string) error {
	k, err := checkKey(namespace, function)
	if err != nil {
		return err
	}
	f, err := d.function(k)
	if err != nil {
		return err
	}
	for _, j := range d.runningJobs(k) {
		j.kill(errRemoved)
	}
	f.stopAll(ctx)
	if err := os.RemoveAll(d.functionDir(k)); err != nil {
		return fmt.Errorf("remove builds of %s: %w", k, err)
	}
	d.opts.Logger.Info("localdriver: removed", "function", k.String())
	return nil
}
