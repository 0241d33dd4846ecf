package auth

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// maxJWKSBytes bounds a JWKS document; real sets are a few KiB.
	maxJWKSBytes = 1 << 20
	// fetchTimeout bounds one JWKS fetch, independent of the caller that started it.
	fetchTimeout = 10 * time.Second
)

// keySet caches the keys of a JWKS and re-reads the source when a token names
// a key id it does not know. The kid is chosen by whoever sent the token, so
// re-reads are rate limited to one attempt per interval (successful or not),
// and callers arriving while a read runs wait for it instead of starting their own.
type keySet struct {
	source   func(ctx context.Context) ([]byte, error)
	interval time.Duration
	now      func() time.Time
	logger   *slog.Logger

	mu        sync.Mutex
	keys      map[string][]jwk
	lastFetch time.Time     // start of the last attempt; zero before the first
	inflight  chan struct{} // closed when the running attempt ends; nil when idle

	// gen counts the replacements of keys: a token verified under an
	// older generation may have been signed with a key since removed, so
	// the Verifier's cache does not trust it (tokenCache).
	gen atomic.Uint64
}

// generation returns the number of times the keys were replaced.
func (s *keySet) generation() uint64 { return s.gen.Load() }

// lookup returns the keys with id kid, reading the source again first when kid
// is unknown and no attempt was made within the interval. It returns an
// EUNAUTHORIZED error when the key stays unknown.
func (s *keySet) lookup(ctx context.Context, kid string) ([]jwk, error) {
	s.mu.Lock()
	for {
		if ks := s.find(kid); len(ks) > 0 {
			s.mu.Unlock()
			return ks, nil
		}
		if ch := s.inflight; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, unauthorized("token signing key is unknown")
			}
			s.mu.Lock()
			continue
		}
		if !s.lastFetch.IsZero() && s.now().Sub(s.lastFetch) < s.interval {
			s.mu.Unlock()
			return nil, unauthorized("token signing key is unknown")
		}
		s.lastFetch = s.now()
		ch := make(chan struct{})
		s.inflight = ch
		s.mu.Unlock()

		// The read serves every waiter, so it must not die with the first caller's request.
		fetchCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
		keys, err := s.load(fetchCtx)
		cancel()

		s.mu.Lock()
		if err != nil {
			// Keep the old keys: a flaky IdP must not log everyone out.
			s.logger.Warn("auth: jwks refresh failed", "err", err)
		} else {
			s.keys = keys
			s.gen.Add(1)
		}
		s.inflight = nil
		close(ch)
		// Loop once more: either the key is there now, or lastFetch is fresh and we give up.
	}
}

// find returns the keys for kid; a token without kid matches only a set
// holding exactly one key, where there is no ambiguity. Callers hold s.mu.
func (s *keySet) find(kid string) []jwk {
	if kid != "" {
		return s.keys[kid]
	}
	if len(s.keys) == 1 {
		for _, ks := range s.keys {
			if len(ks) == 1 {
				return ks
			}
		}
	}
	return nil
}

// load reads and parses the source once.
func (s *keySet) load(ctx context.Context) (map[string][]jwk, error) {
	data, err := s.source(ctx)
	if err != nil {
		return nil, err
	}
	return parseJWKS(data)
}

// fileSource reads a JWKS from a local file on every call, so a rotated file
// is picked up by the next unknown-kid refresh without a restart.
func fileSource(path string) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("read jwks file: %w", err)
		}
		defer f.Close()
		return readLimited(f)
	}
}

// urlSource fetches a JWKS over HTTP(S) with client.
func urlSource(client *http.Client, url string) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, fmt.Errorf("build jwks request: %w", err)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fetch jwks: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetch jwks: status %d", resp.StatusCode)
		}
		return readLimited(resp.Body)
	}
}

// readLimited reads r whole, refusing documents over maxJWKSBytes.
func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read jwks: %w", err)
	}
	if len(data) > maxJWKSBytes {
		return nil, fmt.Errorf("read jwks: larger than %d bytes", maxJWKSBytes)
	}
	return data, nil
}
