package pglocal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DefaultSharedDir is where the clusters of data directories that the user
// running PostgreSQL cannot reach are kept when the process is root (see
// Options.SharedDir).
const DefaultSharedDir = "/var/lib/sless"

const (
	locationFile = "sless.location" // in Dir when the cluster lives elsewhere: its path
	ownerSuffix  = ".owner"         // beside a relocated cluster: the Dir it belongs to
)

// locate returns the directory the cluster's files live in (PGDATA) for the data
// directory dir: dir itself, or, when we are root and acct (the user running
// PostgreSQL) cannot enter dir (a 0700 parent such as /root or a mktemp -d), a
// directory of its own under shared named after dir's path. The password stays
// in dir either way.
//
// Once made, the choice is kept: a relocated cluster is recorded in dir's
// locationFile (recorded is then true), an in-place one by its PG_VERSION.
func locate(dir string, acct account, shared string) (dataDir string, relocated, recorded bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, locationFile))
	switch {
	case err == nil:
		p := strings.TrimSpace(string(b))
		if !filepath.IsAbs(p) {
			return "", false, false, fmt.Errorf("%s: %q is not an absolute path", filepath.Join(dir, locationFile), p)
		}
		return p, true, true, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, false, fmt.Errorf("inspect data directory: %w", err)
	}
	if !acct.other {
		return dir, false, false, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err == nil {
		return dir, false, false, nil // an existing cluster stays where it is
	}
	if err := mkdirParents(dir); err != nil {
		return "", false, false, err
	}
	if acct.checkTraversable(filepath.Dir(dir)) == nil {
		return dir, false, false, nil
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(shared, "pg-"+hex.EncodeToString(sum[:8])), true, false, nil
}

// mkdirParents creates dir's missing parents 0711: the user running PostgreSQL
// may have to pass through them to reach the data directory (when we are
// root), but has no reason to list them. Secrets live one level down, in a
// 0700 directory.
func mkdirParents(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	return nil
}

// prepareRelocated makes room for a new relocated cluster: dir (root's, 0700)
// will hold the password, dataDir must be free, and dataDir+".owner" names dir,
// written before initdb so that an interrupted initialisation is cleaned up by
// the next attempt. A cluster left in dataDir by an earlier data directory at
// the same path (removed since, with the password that opened it) is stopped
// and deleted, as removing that directory asked for.
func prepareRelocated(ctx context.Context, dir, dataDir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create data directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	if err := mkdirParents(dataDir); err != nil {
		return err
	}
	ownerPath := dataDir + ownerSuffix
	if _, err := os.Lstat(dataDir); err == nil {
		owner, err := os.ReadFile(ownerPath)
		if err != nil || strings.TrimSpace(string(owner)) != dir {
			return fmt.Errorf("%s (the cluster location for %s) exists and does not belong to it: remove it, or choose another data directory", dataDir, dir)
		}
		if err := stopStale(ctx, dataDir); err != nil {
			return err
		}
		if err := os.RemoveAll(dataDir); err != nil {
			return fmt.Errorf("remove the cluster of an earlier %s: %w", dir, err)
		}
	}
	if err := os.WriteFile(ownerPath, []byte(dir+"\n"), 0o600); err != nil {
		return fmt.Errorf("record cluster owner: %w", err)
	}
	return nil
}

// recordRelocation ties dir and its freshly initialised cluster to each other
// (again, if the shared directory was wiped); dir's record is written last, so
// that an interrupted initialisation is redone by the next start.
func recordRelocation(dir, dataDir string) error {
	if err := os.WriteFile(dataDir+ownerSuffix, []byte(dir+"\n"), 0o600); err != nil {
		return fmt.Errorf("record cluster owner: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, locationFile), []byte(dataDir+"\n"), 0o600); err != nil {
		return fmt.Errorf("record cluster location: %w", err)
	}
	return nil
}
