package secrets

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DevKeyFile is the key file KeyringFromEnv creates in a dev data directory.
const DevKeyFile = "secrets.key"

// maxKeyFile bounds what is read of a key file: a path pointing at
// something else fails quickly.
const maxKeyFile = 1 << 20

// KeyringFromEnv returns the keyring configured by SLESS_SECRETS_KEY, read
// with getenv. Its value is the keys themselves when it is standard base64
// (with padding) of exactly 32 bytes, or several such separated by commas
// (the current key first, as in a key file: how a server given its keys by
// a Kubernetes Secret goes through a rotation, see RotateKEK), and the path
// of a key file (see LoadKeyringFile) otherwise. A file is followed, so
// RotateKeyFile rotates it online; inline keys change with a restart. Unset, it uses devDir/secrets.key, creating it (mode 0600, a
// key from crypto/rand) on first use, as `sless dev` does with its data
// dir; unset with devDir "", it returns ErrNoKey. No error quotes the
// variable's value, in case it was a key mistyped.
func KeyringFromEnv(getenv func(string) string, devDir string) (*Keyring, error) {
	v := strings.TrimSpace(getenv(EnvKey))
	switch {
	case v != "":
		if keys, ok := inlineKeys(v); ok {
			return newKeyring("", keys)
		}
		if _, err := os.Stat(v); err != nil {
			return nil, fmt.Errorf("secrets: %s is neither a key (base64 of 32 bytes) nor the path of a key file that can be read", EnvKey)
		}
		return LoadKeyringFile(v)
	case devDir != "":
		path := filepath.Join(devDir, DevKeyFile)
		if err := createKeyFile(path); err != nil {
			return nil, err
		}
		return LoadKeyringFile(path)
	default:
		return nil, ErrNoKey
	}
}

// inlineKeys returns the keys of a comma-separated list of keys, and
// whether v is one.
func inlineKeys(v string) ([][]byte, bool) {
	var keys [][]byte
	for part := range strings.SplitSeq(v, ",") {
		key, ok := inlineKey(strings.TrimSpace(part))
		if !ok {
			return nil, false
		}
		keys = append(keys, key)
	}
	return keys, true
}

func inlineKey(v string) ([]byte, bool) {
	key, err := base64.StdEncoding.Strict().DecodeString(v)
	return key, err == nil && len(key) == KeyBytes
}

// parseKeys reads the keys of a key file's contents, in order. An error
// names the line, never its text.
func parseKeys(data []byte) ([][]byte, error) {
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, ok := inlineKey(line)
		if !ok {
			return nil, fmt.Errorf("line %d is not a key (want base64 of 32 bytes)", n)
		}
		keys = append(keys, key)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return keys, nil
}

// readKeyFile reads and parses the key file at path, refusing one that
// group or others may access.
func readKeyFile(path string) ([][]byte, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("key file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, nil, fmt.Errorf("key file %s has mode %04o: group or others may access it, and whoever reads it can open every secret; make it the owner's only: chmod 600 %s",
			path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if len(data) > maxKeyFile {
		return nil, nil, fmt.Errorf("key file %s is over %d bytes: not a key file", path, maxKeyFile)
	}
	keys, err := parseKeys(data)
	if err != nil {
		return nil, nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return keys, fi, nil
}

// keyFileText is a key file holding keys, current first, each under a
// comment with its fingerprint.
func keyFileText(keys [][]byte) []byte {
	var b bytes.Buffer
	b.WriteString("# sless secrets: key-encryption keys, base64 of 32 bytes a line.\n")
	b.WriteString("# The first wraps new data keys; every one unwraps. Keep this file mode 0600.\n")
	for _, key := range keys {
		fmt.Fprintf(&b, "# kek_id %s\n%s\n", Fingerprint(key), base64.StdEncoding.EncodeToString(key))
	}
	return b.Bytes()
}

// writeKeyFile replaces the file at path with keys atomically (a temporary
// file in the same directory, synced, renamed over it), mode 0600: a reader
// sees the old file or the new one, never a part.
func writeKeyFile(path string, keys [][]byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(keyFileText(keys)); err != nil {
		tmp.Close()
		return fmt.Errorf("write key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// createKeyFile creates a key file with one new key at path unless a file
// is there already. Two processes racing both end up with the same key: the
// file appears whole (linked from a complete temporary file) or not at all.
func createKeyFile(path string) error {
	if _, err := os.Lstat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // LoadKeyringFile reports what is wrong with it
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create key file: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("create key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(keyFileText([][]byte{newKey()}))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create key file: %w", err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// newKey returns KeyBytes from crypto/rand.
func newKey() []byte {
	key := make([]byte, KeyBytes)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (it crashes the program instead)
	return key
}
