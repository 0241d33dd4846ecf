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

// initCluster runs initdb with a freshly generated superuser password and keeps
// the password in the data directory for later starts.
func initCluster(ctx context.Context, bins binaries, acct account, dir string) (string, error) {
	if err := acct.prepareDir(dir); err != nil {
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
		"-D", dir, "-U", Superuser, "-A", "scram-sha-256", "--pwfile="+pw.Name(),
		"-E", "UTF8", "--locale=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("initdb %s: %w\n%s", dir, err, tail(string(out), 20))
	}
	if err := os.WriteFile(filepath.Join(dir, passwordFile), []byte(password+"\n"), 0o600); err != nil {
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

func readPassword(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, passwordFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("data directory %s was not created by sless (no %s): remove it, or choose another directory, or use DATABASE_URL", dir, passwordFile)
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
