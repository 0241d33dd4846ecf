package secrets

import (
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// KeyBytes is the size of every key: key-encryption keys and data keys
// are AES-256 keys.
const KeyBytes = 32

// EnvKey is the environment variable KeyringFromEnv reads.
const EnvKey = "SLESS_SECRETS_KEY"

// ErrNoKey is KeyringFromEnv's answer when no key is configured and no dev
// directory is given: the caller may run with secrets disabled.
var ErrNoKey = errors.New("secrets: " + EnvKey + " is not set; it is required for secrets " +
	"(the path of a key file, or a key: base64 of 32 random bytes)")

// Keyring holds the operator's key-encryption keys (KEKs): the first wraps
// new data keys, every one unwraps. A keyring loaded from a file follows the
// file: it reads it again before wrapping when the file changed, and when it
// meets a kek_id it does not know, so a running server keeps working while
// another process rotates the file (RotateKeyFile). It is safe for
// concurrent use, and prints as its fingerprints only: never the keys.
type Keyring struct {
	path string // "" for a keyring that does not follow a file

	mu   sync.Mutex
	keks []kek
	file os.FileInfo // of path when last read
}

// kek is one key-encryption key: its fingerprint and its cipher. The raw
// bytes are not kept.
type kek struct {
	id   string
	aead cipher.AEAD
}

// Format prints the fingerprint only, whatever the verb.
func (k kek) Format(f fmt.State, _ rune) { io.WriteString(f, "kek:"+k.id) }

// ParseKeyring returns the keyring of a key file's contents: base64 (std) of
// 32 bytes a line, the current key first and older ones after; blank lines
// and lines starting with # are skipped. It does not follow any file.
func ParseKeyring(data []byte) (*Keyring, error) {
	keys, err := parseKeys(data)
	if err != nil {
		return nil, err
	}
	return newKeyring("", keys)
}

// LoadKeyringFile reads the key file at path (see ParseKeyring) and returns
// a keyring that follows it. A file that group or others may access is
// refused: whoever reads it can open every secret.
func LoadKeyringFile(path string) (*Keyring, error) {
	keys, fi, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	k, err := newKeyring(path, keys)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	k.file = fi
	return k, nil
}

func newKeyring(path string, keys [][]byte) (*Keyring, error) {
	keks, err := keksOf(keys)
	if err != nil {
		return nil, err
	}
	return &Keyring{path: path, keks: keks}, nil
}

// keksOf builds the ciphers of keys, in order, dropping repeats.
func keksOf(keys [][]byte) ([]kek, error) {
	if len(keys) == 0 {
		return nil, errors.New("no key: want base64 of 32 bytes on a line")
	}
	var keks []kek
	seen := map[string]bool{}
	for _, key := range keys {
		id := Fingerprint(key)
		if seen[id] {
			continue
		}
		seen[id] = true
		if len(key) != KeyBytes {
			return nil, fmt.Errorf("a key of %d bytes, want %d", len(key), KeyBytes)
		}
		aead, err := gcm(key)
		if err != nil {
			return nil, err
		}
		keks = append(keks, kek{id: id, aead: aead})
	}
	return keks, nil
}

// Fingerprint returns the kek_id of a key: the first 8 bytes of a SHA-256 of
// it, in hex. It names a key in rows, logs and errors, and reveals nothing of
// it.
func Fingerprint(key []byte) string {
	h := sha256.New()
	h.Write([]byte("sless secrets kek fingerprint\x00"))
	h.Write(key)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// ID returns the fingerprint of the current key, the one that wraps.
func (k *Keyring) ID() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keks[0].id
}

// IDs returns the fingerprints of every key, the current one first.
func (k *Keyring) IDs() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	ids := make([]string, len(k.keks))
	for i, x := range k.keks {
		ids[i] = x.id
	}
	return ids
}

// String names the keyring by its fingerprints.
func (k *Keyring) String() string {
	s := "secrets.Keyring{" + strings.Join(k.IDs(), ",")
	if k.path != "" {
		s += " file " + k.path
	}
	return s + "}"
}

// GoString is String, so %#v prints no key either.
func (k *Keyring) GoString() string { return k.String() }

// Format is String for every verb (%x included).
func (k *Keyring) Format(f fmt.State, _ rune) { io.WriteString(f, k.String()) }

// current returns the key that wraps. A keyring following a file reads it
// again first when it changed, so that a key the file no longer holds (a
// finished rotation) never wraps a new data key.
func (k *Keyring) current() (kek, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.path != "" {
		fi, err := os.Stat(k.path)
		if err != nil {
			return kek{}, fmt.Errorf("key file: %w", err)
		}
		if !sameFile(fi, k.file) {
			if err := k.reloadLocked(); err != nil {
				return kek{}, err
			}
		}
	}
	return k.keks[0], nil
}

// lookup returns the key with fingerprint id; a keyring following a file
// reads it again once when it does not know id.
func (k *Keyring) lookup(id string) (kek, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if x, ok := find(k.keks, id); ok || k.path == "" {
		return x, ok, nil
	}
	if err := k.reloadLocked(); err != nil {
		return kek{}, false, err
	}
	x, ok := find(k.keks, id)
	return x, ok, nil
}

func find(keks []kek, id string) (kek, bool) {
	for _, x := range keks {
		if x.id == id {
			return x, true
		}
	}
	return kek{}, false
}

func (k *Keyring) reloadLocked() error {
	keys, fi, err := readKeyFile(k.path)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	keks, err := keksOf(keys)
	if err != nil {
		return fmt.Errorf("reload key file %s: %w", k.path, err)
	}
	k.keks, k.file = keks, fi
	return nil
}

// with returns a keyring that does not follow a file, whose current key is
// k's and which also unwraps with older's keys: a vault's keyring while it
// rotates from older to k.
func (k *Keyring) with(older *Keyring) *Keyring {
	k.mu.Lock()
	keks := append([]kek(nil), k.keks...)
	k.mu.Unlock()
	older.mu.Lock()
	defer older.mu.Unlock()
	for _, x := range older.keks {
		if _, ok := find(keks, x.id); !ok {
			keks = append(keks, x)
		}
	}
	return &Keyring{keks: keks}
}

func sameFile(a, b os.FileInfo) bool {
	return b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
