package auth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slessio/sless/domain"
)

// DevKeyFile is the name of the development HS256 key inside the data dir.
const DevKeyFile = "dev-signing.key"

// LoadOrCreateKey returns the development HS256 key stored in dir/DevKeyFile,
// creating dir (0700) and a random 32-byte key (hex, file mode 0600) on first
// use. Concurrent first calls agree on one key: the file appears atomically
// and the loser reads the winner's key. It returns EINVALID when the file
// exists but does not hold a 32-byte hex key or may be read by group or
// others, and a plain error on I/O failure.
func LoadOrCreateKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, DevKeyFile)
	if key, err := readKey(path); !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create key dir: %w", err)
	}
	key := make([]byte, minSecretBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate dev key: %w", err)
	}
	// CreateTemp creates the file with mode 0600.
	tmp, err := os.CreateTemp(dir, DevKeyFile+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("write dev key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write dev key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("write dev key: %w", err)
	}
	// Link fails if the file exists, so a racing process never sees a half-written
	// key and never overwrites one another process already handed out.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readKey(path)
		}
		return nil, fmt.Errorf("write dev key: %w", err)
	}
	return key, nil
}

// readKey reads a hex key written by LoadOrCreateKey. A key that group or
// others may read is refused (EINVALID): whoever read it could mint any
// token, operator tokens included.
func readKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, domain.Errorf(domain.EINVALID, "%s is readable by other users (mode %04o): anyone who read it can mint tokens; "+
			"make it private (chmod 600) if you are sure no one did, or delete it to generate a new key", path, perm)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != minSecretBytes {
		return nil, domain.Errorf(domain.EINVALID, "%s does not hold a %d-byte hex key; delete it to generate a new one", path, minSecretBytes)
	}
	return key, nil
}

// Mint returns an HS256 token for sub signed with secret, valid from now for
// ttl, for development and tests (`sless token --sub alice --ttl 24h`). extra
// adds claims such as iss, aud or sless_admin; it cannot override sub, iat or
// exp. It returns EINVALID for an empty sub, a non-positive ttl or a secret
// shorter than 32 bytes.
func Mint(secret []byte, sub string, ttl time.Duration, extra map[string]any) (string, error) {
	if sub == "" {
		return "", domain.FieldErrorf("sub", "must not be empty")
	}
	if ttl <= 0 {
		return "", domain.FieldErrorf("ttl", "must be positive")
	}
	if len(secret) < minSecretBytes {
		return "", domain.Errorf(domain.EINVALID, "HS256 secret must be at least %d bytes", minSecretBytes)
	}
	now := time.Now()
	claims := jwt.MapClaims{}
	for k, v := range extra {
		claims[k] = v
	}
	claims["sub"] = sub
	claims["iat"] = now.Unix()
	claims["exp"] = now.Add(ttl).Unix()
	signed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return signed, nil
}
