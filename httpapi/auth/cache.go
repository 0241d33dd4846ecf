package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// DefaultTokenCacheSize is how many verified tokens a Verifier remembers
// when Config.TokenCacheSize is zero.
const DefaultTokenCacheSize = 4096

// tokenKey identifies a token in the cache: the SHA-256 of its raw form,
// so the cache holds no usable credential.
type tokenKey [sha256.Size]byte

// tokenCache remembers the Principals of tokens verified lately. A client
// sends the same token with every request; its signature and claims are
// checked on the first, and the later ones, until the token's exp (never
// past it, whatever the leeway), cost a hash and a map lookup. Only
// accepted tokens are stored, so a caller can fill it only with tokens we
// issued. Each entry records the generation of the key set it was verified
// under (keySet.generation); an entry of an older generation is never used,
// so a key removed from a refreshed JWKS stops verifying cached tokens at
// once, as it does uncached ones. It holds at most max entries.
type tokenCache struct {
	max int

	mu      sync.RWMutex
	entries map[tokenKey]cachedToken
}

// cachedToken is a verified token's Principal and the key set generation
// it was verified under.
type cachedToken struct {
	p   Principal
	gen uint64
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{max: max, entries: make(map[tokenKey]cachedToken)}
}

// get returns the Principal of the token with key, verified under key set
// generation gen, when it is cached and has not expired at now.
func (c *tokenCache) get(key tokenKey, gen uint64, now time.Time) (Principal, bool) {
	c.mu.RLock()
	e, ok := c.entries[key]
	c.mu.RUnlock()
	if !ok {
		return Principal{}, false
	}
	if e.gen != gen || !now.Before(e.p.ExpiresAt) {
		c.mu.Lock()
		if cur, ok := c.entries[key]; ok && cur == e {
			delete(c.entries, key)
		}
		c.mu.Unlock()
		return Principal{}, false
	}
	return e.p, true
}

// put stores p, just verified under key set generation gen, unless it has
// expired at now. A full cache first drops what has expired or was verified
// under another generation, then, if still full, arbitrary entries down to
// three quarters of max, so that sweeps stay rare.
func (c *tokenCache) put(key tokenKey, p Principal, gen uint64, now time.Time) {
	if !now.Before(p.ExpiresAt) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k, e := range c.entries {
			if e.gen != gen || !now.Before(e.p.ExpiresAt) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries { // map order is unspecified: which go is arbitrary
			if len(c.entries) < c.max*3/4 || len(c.entries) == 0 {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = cachedToken{p: p, gen: gen}
}

// len returns the number of entries, for tests.
func (c *tokenCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
