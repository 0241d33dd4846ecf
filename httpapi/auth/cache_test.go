package auth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// markCached renames the cached Principal of tok, so that a Verify
// answering with the mark is known to have come from the cache; it fails
// when tok is not cached.
func markCached(t *testing.T, v *Verifier, tok string) {
	t.Helper()
	key := tokenKey(sha256.Sum256([]byte(tok)))
	v.cache.mu.Lock()
	defer v.cache.mu.Unlock()
	e, ok := v.cache.entries[key]
	if !ok {
		t.Fatal("the token is not cached")
	}
	e.p.Name = "from the cache"
	v.cache.entries[key] = e
}

func TestVerify_CacheUntilExpNeverPast(t *testing.T) {
	t.Parallel()
	v, clock, _ := setupVerifier(t, nil)
	ctx := context.Background()
	exp := clock.Now().Add(90 * time.Second)
	tok := sign(t, jwt.SigningMethodHS256, testSecret, "", with(baseClaims(clock.Now()), "exp", exp.Unix()))
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	markCached(t, v, tok)

	clock.Set(exp.Add(-time.Second))
	p, err := v.Verify(ctx, tok)
	if err != nil || p.Name != "from the cache" {
		t.Fatalf("a second before exp: %+v, %v; want the cached principal", p, err)
	}

	// At exp the entry is over: the token is verified again, and accepted
	// within the leeway without being cached again.
	clock.Set(exp)
	p, err = v.Verify(ctx, tok)
	if err != nil || p.Name == "from the cache" || p.Subject != "alice" {
		t.Fatalf("at exp: %+v, %v; want a verified principal, not the cached one", p, err)
	}
	if n := v.cache.len(); n != 0 {
		t.Fatalf("%d cached tokens after exp, want 0", n)
	}
	clock.Set(exp.Add(DefaultLeeway + time.Second))
	_, err = v.Verify(ctx, tok)
	requireUnauthorized(t, err, "token has expired")
}

func TestVerify_CacheKeepsNoRejectedToken(t *testing.T) {
	t.Parallel()
	v, clock, _ := setupVerifier(t, nil)
	ctx := context.Background()
	now := clock.Now()
	good := sign(t, jwt.SigningMethodHS256, testSecret, "", baseClaims(now))
	if _, err := v.Verify(ctx, good); err != nil {
		t.Fatal(err)
	}
	rejected := map[string]string{
		// The cached token's header and claims under another signature.
		"tampered signature": good[:len(good)-4] + flip(good[len(good)-4:]),
		"wrong secret":       sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef!"), "", baseClaims(now)),
		"expired":            sign(t, jwt.SigningMethodHS256, testSecret, "", with(baseClaims(now), "exp", now.Add(-time.Hour).Unix())),
		"other issuer":       sign(t, jwt.SigningMethodHS256, testSecret, "", with(baseClaims(now), "iss", "https://evil.example")),
		"unknown kid":        sign(t, jwt.SigningMethodRS256, testRSAKey(), "nobody", baseClaims(now)),
	}
	for name, tok := range rejected {
		for range 2 { // twice: the second is not answered from the cache either
			if _, err := v.Verify(ctx, tok); err == nil {
				t.Fatalf("%s: accepted", name)
			}
		}
	}
	if n := v.cache.len(); n != 1 {
		t.Fatalf("%d cached tokens, want 1 (only the good one)", n)
	}
}

// flip changes every character of a base64url string into another.
func flip(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
	}
	return string(b)
}

func TestVerify_CacheIsBounded(t *testing.T) {
	t.Parallel()
	const max = 8
	v, clock, _ := setupVerifier(t, func(c *Config) { c.TokenCacheSize = max })
	ctx := context.Background()
	var tokens []string
	for i := range 100 {
		tokens = append(tokens, sign(t, jwt.SigningMethodHS256, testSecret, "", with(baseClaims(clock.Now()), "sub", fmt.Sprintf("user-%d", i))))
	}
	for round := range 2 {
		for i, tok := range tokens {
			p, err := v.Verify(ctx, tok)
			if err != nil || p.Subject != fmt.Sprintf("user-%d", i) {
				t.Fatalf("round %d, token %d: %+v, %v", round, i, p, err)
			}
			if n := v.cache.len(); n > max {
				t.Fatalf("%d cached tokens, bound %d", n, max)
			}
		}
	}
}

func TestVerify_CacheForgetsTokensOfARotatedKeySet(t *testing.T) {
	t.Parallel()
	v, clock, srv := setupVerifier(t, func(c *Config) { c.JWKSRefreshInterval = 10 * time.Second })
	ctx := context.Background()
	old := sign(t, jwt.SigningMethodRS256, testRSAKey(), rsaKid, baseClaims(clock.Now()))
	hs := sign(t, jwt.SigningMethodHS256, testSecret, "", baseClaims(clock.Now()))
	for _, tok := range []string{old, hs} {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	// The IdP drops the key; a token of the new key makes the verifier read the set again.
	srv.set(func(s *jwksServer) { s.doc = jwksDoc(t, jwkFor(t, "rsa-2", &testOtherRSAKey().PublicKey)) })
	clock.Advance(11 * time.Second)
	if _, err := v.Verify(ctx, sign(t, jwt.SigningMethodRS256, testOtherRSAKey(), "rsa-2", baseClaims(clock.Now()))); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	// The token of the removed key was cached, and is refused all the same.
	_, err := v.Verify(ctx, old)
	requireUnauthorized(t, err, "token signing key is unknown")
	// The HS256 secret did not change: its token is verified again and passes.
	if _, err := v.Verify(ctx, hs); err != nil {
		t.Fatalf("HS256 token after the rotation: %v", err)
	}
}

func TestVerify_CacheOff(t *testing.T) {
	t.Parallel()
	v, clock, _ := setupVerifier(t, func(c *Config) { c.TokenCacheSize = -1 })
	if v.cache != nil {
		t.Fatal("a negative TokenCacheSize must turn the cache off")
	}
	exp := clock.Now().Add(time.Minute)
	tok := sign(t, jwt.SigningMethodHS256, testSecret, "", with(baseClaims(clock.Now()), "exp", exp.Unix()))
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	clock.Set(exp.Add(DefaultLeeway + time.Second))
	_, err := v.Verify(context.Background(), tok)
	requireUnauthorized(t, err, "token has expired")
}

func TestVerify_CacheUnderConcurrentUse(t *testing.T) {
	t.Parallel()
	v, clock, _ := setupVerifier(t, func(c *Config) { c.TokenCacheSize = 4 })
	var tokens []string
	for i := range 64 {
		tokens = append(tokens, sign(t, jwt.SigningMethodES256, testECKey(), ecKid, with(baseClaims(clock.Now()), "sub", fmt.Sprintf("user-%d", i%8))))
	}
	tokens = append(tokens, tokens...)
	for i, err := range verifyConcurrently(v, tokens) {
		if err != nil {
			t.Fatalf("token %d: %v", i, err)
		}
	}
}
