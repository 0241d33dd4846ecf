package s3embed

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CredentialsFile is the file in a data dir that holds the embedded
// server's keys (LoadOrCreateCredentials).
const CredentialsFile = "s3-credentials.json"

// credentials is the content of CredentialsFile.
type credentials struct {
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
}

// LoadOrCreateCredentials returns the access and secret key kept in
// dir/CredentialsFile, writing random ones (mode 0600) the first time: each
// data dir's server has keys of its own, which only the platform can read.
// A file that group or others may read is refused, like the signing key.
func LoadOrCreateCredentials(dir string) (accessKey, secretKey string, err error) {
	path := filepath.Join(dir, CredentialsFile)
	if c, err := readCredentials(path); !errors.Is(err, fs.ErrNotExist) {
		return c.AccessKey, c.SecretKey, err
	}
	var raw [12 + 32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", fmt.Errorf("generate S3 keys: %w", err)
	}
	c := credentials{AccessKey: "sless-" + hex.EncodeToString(raw[:12]), SecretKey: hex.EncodeToString(raw[12:])}
	data, err := json.Marshal(c)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	tmp, err := os.CreateTemp(dir, CredentialsFile+".tmp-*") // 0600
	if err != nil {
		return "", "", fmt.Errorf("write S3 keys: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", "", fmt.Errorf("write S3 keys: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", "", fmt.Errorf("write S3 keys: %w", err)
	}
	// Link fails when another process wrote the file first: use its keys.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			c, err := readCredentials(path)
			return c.AccessKey, c.SecretKey, err
		}
		return "", "", fmt.Errorf("write S3 keys: %w", err)
	}
	return c.AccessKey, c.SecretKey, nil
}

func readCredentials(path string) (credentials, error) {
	var c credentials
	info, err := os.Stat(path)
	if err != nil {
		return c, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return c, fmt.Errorf("%s may be read by others (mode %v): chmod 600 it", path, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil || c.AccessKey == "" || c.SecretKey == "" {
		return c, fmt.Errorf("%s holds no S3 keys: remove it to make new ones", path)
	}
	return c, nil
}
