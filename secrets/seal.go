package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"sync"

	"github.com/google/uuid"
)

// Additional data labels: a wrapped data key and a sealed value are
// authenticated as what they are, so that neither opens as the other.
const (
	dekLabel   = "sless/secrets/v1/dek"
	valueLabel = "sless/secrets/v1/value"
)

// dekAAD binds a wrapped data key to its namespace and key_id: a wrapped key
// copied into another namespace's row does not unwrap.
func dekAAD(namespace string, keyID uuid.UUID) []byte {
	return aad(dekLabel, []byte(namespace), keyID[:])
}

// valueAAD binds a sealed value to its row and to the data key that sealed
// it: a value copied to another name, version or namespace does not open.
func valueAAD(namespace, name string, version int, keyID uuid.UUID) []byte {
	return aad(valueLabel, []byte(namespace), []byte(name), binary.BigEndian.AppendUint64(nil, uint64(version)), keyID[:])
}

// aad joins its parts, each after its length, so that no two different
// lists of parts make the same bytes.
func aad(label string, parts ...[]byte) []byte {
	b := []byte(label)
	for _, p := range parts {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

// gcm returns AES-256-GCM under key.
func gcm(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts plain under aead with a random 12-byte nonce, which leads
// the result. Random nonces are safe for far more messages than one data key
// ever seals: a namespace gets a new key on every deletion.
func seal(aead cipher.AEAD, plain, additional []byte) []byte {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (it crashes the program instead)
	return aead.Seal(nonce, nonce, plain, additional)
}

var errOpen = errors.New("message authentication failed")

// open reverses seal; it fails unless sealed was made by seal under the same
// key with the same additional data, unaltered.
func open(aead cipher.AEAD, sealed, additional []byte) ([]byte, error) {
	n := aead.NonceSize()
	if len(sealed) < n+aead.Overhead() {
		return nil, errOpen
	}
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], additional)
	if err != nil {
		return nil, errOpen
	}
	return plain, nil
}

// dataKey is an unwrapped data key: its id and its cipher.
type dataKey struct {
	id   uuid.UUID
	aead cipher.AEAD
}

// dekCacheSize bounds the unwrapped data keys kept: enough for the
// namespaces a server reads secrets of at once; past it any one goes.
const dekCacheSize = 1024

// dekCache keeps unwrapped data keys by key_id, so that Open unwraps a
// namespace's key once. A re-keyed namespace has a new key_id: an old entry
// is never used again, and Shred drops it.
type dekCache struct {
	mu sync.Mutex
	m  map[uuid.UUID]dataKey
}

func (c *dekCache) get(id uuid.UUID) (dataKey, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.m[id]
	return k, ok
}

func (c *dekCache) put(k dataKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[uuid.UUID]dataKey)
	}
	if _, ok := c.m[k.id]; !ok && len(c.m) >= dekCacheSize {
		for id := range c.m { // map order: an arbitrary entry
			delete(c.m, id)
			break
		}
	}
	c.m[k.id] = k
}

func (c *dekCache) drop(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

func (c *dekCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}
