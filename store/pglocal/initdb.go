package pglocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// initCluster runs initdb on dataDir with a freshly generated superuser password
// and keeps the password in dir (0600, ours) for later starts.
func initCluster(ctx context.Context, bins binaries, acct account, dir, dataDir string) (string, error) {
	if err := acct.prepareDir(dataDir); err != nil {
		return "", err
	}
	password, err := newPassword()
	if err != nil {
		return "", err
	}
	// initdb reads the password from a file; the file must be readable by the
	// account, and a pipe on /dev/stdin is not once we have switched users.
	pw, err := os.CreateTemp("", "sless-pgpw-")
	if err != nil {
		return "", err
	}
	defer os.Remove(pw.Name())
	_, err = pw.WriteString(password + "\n")
	if cerr := pw.Close(); err == nil {
		err = cerr
	}
	if err == nil && acct.other {
		err = os.Chown(pw.Name(), int(acct.uid), int(acct.gid))
	}
	if err != nil {
		return "", fmt.Errorf("write initdb password file: %w", err)
	}
	cmd := acct.command(ctx, bins.path("initdb"),
		"-D", dataDir, "-U", Superuser, "-A", "scram-sha-256", "--pwfile="+pw.Name(),
		"-E", "UTF8", "--locale=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("initdb %s: %w\n%s", dataDir, err, tail(string(out), 20))
	}
	if err := writePrivate(filepath.Join(dir, passwordFile), password+"\n"); err != nil {
		return "", fmt.Errorf("keep superuser password: %w", err)
	}
	return password, nil
}

func newPassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writePrivate writes a file only its owner (us) may read, whatever the umask
// and whatever mode an earlier file at path had.
func writePrivate(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

// readPassword reads the superuser password kept in dir, tightening the file to
// 0600 if someone opened it up.
func readPassword(dir string) (string, error) {
	path := filepath.Join(dir, passwordFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("data directory %s was not created by sless (no %s): remove it, or choose another directory, or use DATABASE_URL", dir, passwordFile)
	}
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() != 0o600 {
		_ = os.Chmod(path, 0o600)
	}
	return strings.TrimSpace(string(b)), nil
}
