package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slessio/sless/internal/testutil"
)

func randomKid(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// verifyConcurrently verifies every token at once and returns the errors in order.
func verifyConcurrently(v *Verifier, tokens []string) []error {
	errs := make([]error, len(tokens))
	var start, done sync.WaitGroup
	start.Add(1)
	for i, tok := range tokens {
		done.Go(func() {
			start.Wait()
			_, errs[i] = v.Verify(context.Background(), tok)
		})
	}
	start.Done()
	done.Wait()
	return errs
}

func TestKeySet_UnknownKidRefreshIsRateLimited(t *testing.T) {
	t.Parallel()
	v, clock, srv := setupVerifier(t, nil) // default one-minute interval
	// A slow IdP keeps the first fetch in flight while the other callers arrive.
	srv.set(func(s *jwksServer) { s.delay = 100 * time.Millisecond })
	now := clock.Now()

	// Round 1, a cold cache: 200 forged kids and 50 real ones arrive together.
	// The real ones must wait for the single fetch and pass; the forged ones fail.
	var tokens []string
	for range 200 {
		tokens = append(tokens, sign(t, jwt.SigningMethodRS256, testRSAKey(), randomKid(t), baseClaims(now)))
	}
	for range 50 {
		tokens = append(tokens, sign(t, jwt.SigningMethodRS256, testRSAKey(), rsaKid, baseClaims(now)))
	}
	errs := verifyConcurrently(v, tokens)
	for i, err := range errs {
		if i < 200 {
			requireUnauthorized(t, err, "token signing key is unknown")
		} else if err != nil {
			t.Fatalf("valid token %d rejected: %v", i, err)
		}
	}
	if got := srv.fetches.Load(); got != 1 {
		t.Fatalf("round 1: %d JWKS fetches, want exactly 1", got)
	}

	// Round 2, still inside the window: 200 more forged kids cause no fetch.
	clock.Advance(59 * time.Second)
	errs = verifyConcurrently(v, tokens[:200])
	for _, err := range errs {
		requireUnauthorized(t, err, "token signing key is unknown")
	}
	if got := srv.fetches.Load(); got != 1 {
		t.Fatalf("round 2: %d JWKS fetches, want still 1", got)
	}

	// Round 3, the window has passed: one refresh for the whole burst.
	clock.Advance(2 * time.Second)
	errs = verifyConcurrently(v, tokens[:200])
	for _, err := range errs {
		requireUnauthorized(t, err, "token signing key is unknown")
	}
	if got := srv.fetches.Load(); got != 2 {
		t.Fatalf("round 3: %d JWKS fetches, want 2", got)
	}
}

func TestKeySet_RotationPickedUpAfterInterval(t *testing.T) {
	t.Parallel()
	v, clock, srv := setupVerifier(t, func(c *Config) { c.JWKSRefreshInterval = 10 * time.Second })
	ctx := context.Background()
	old := sign(t, jwt.SigningMethodRS256, testRSAKey(), rsaKid, baseClaims(clock.Now()))
	if _, err := v.Verify(ctx, old); err != nil {
		t.Fatal(err)
	}
	// The IdP rotates: the old key is gone, a new one appears.
	srv.set(func(s *jwksServer) {
		s.doc = jwksDoc(t, jwkFor(t, "rsa-2", &testOtherRSAKey().PublicKey))
	})
	clock.Advance(11 * time.Second)
	rotated := sign(t, jwt.SigningMethodRS256, testOtherRSAKey(), "rsa-2", baseClaims(clock.Now()))
	if _, err := v.Verify(ctx, rotated); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	// The refresh replaced the set, so the removed key no longer verifies.
	clock.Advance(11 * time.Second)
	_, err := v.Verify(ctx, sign(t, jwt.SigningMethodRS256, testRSAKey(), rsaKid, baseClaims(clock.Now())))
	requireUnauthorized(t, err, "token signing key is unknown")
	if got := srv.fetches.Load(); got != 3 {
		t.Fatalf("%d fetches, want 3 (first use, rotation, removed kid)", got)
	}
}

func TestKeySet_FailedFetchKeepsKeysAndCoolsDown(t *testing.T) {
	t.Parallel()
	v, clock, srv := setupVerifier(t, nil)
	ctx := context.Background()
	if _, err := v.Verify(ctx, sign(t, jwt.SigningMethodES256, testECKey(), ecKid, baseClaims(clock.Now()))); err != nil {
		t.Fatal(err)
	}
	srv.set(func(s *jwksServer) { s.status = http.StatusInternalServerError })

	clock.Advance(2 * time.Minute)
	_, err := v.Verify(ctx, sign(t, jwt.SigningMethodES256, testECKey(), randomKid(t), baseClaims(clock.Now())))
	requireUnauthorized(t, err, "token signing key is unknown")
	// The failed attempt counts against the window too: no retry storm.
	_, err = v.Verify(ctx, sign(t, jwt.SigningMethodES256, testECKey(), randomKid(t), baseClaims(clock.Now())))
	requireUnauthorized(t, err, "token signing key is unknown")
	if got := srv.fetches.Load(); got != 2 {
		t.Fatalf("%d fetches, want 2", got)
	}
	// Known keys keep working while the IdP is down.
	if _, err := v.Verify(ctx, sign(t, jwt.SigningMethodRS256, testRSAKey(), rsaKid, baseClaims(clock.Now()))); err != nil {
		t.Fatalf("known key after failed refresh: %v", err)
	}
}

func TestKeySet_UnreachableIdPAtFirstUse(t *testing.T) {
	t.Parallel()
	v, clock, srv := setupVerifier(t, nil)
	srv.set(func(s *jwksServer) { s.doc = []byte(`{"keys":[]}`) })
	ctx := context.Background()
	tok := sign(t, jwt.SigningMethodRS256, testRSAKey(), rsaKid, baseClaims(clock.Now()))
	_, err := v.Verify(ctx, tok)
	requireUnauthorized(t, err, "token signing key is unknown")

	// Once the IdP serves keys again, the next window recovers.
	srv.set(func(s *jwksServer) { s.doc = defaultJWKS(t) })
	clock.Advance(time.Minute)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
}

func TestKeySet_FetchOutlivesTheCallerThatStartedIt(t *testing.T) {
	t.Parallel()
	v, clock, srv := setupVerifier(t, nil)
	srv.set(func(s *jwksServer) { s.delay = 300 * time.Millisecond })
	tok := sign(t, jwt.SigningMethodRS256, testRSAKey(), rsaKid, baseClaims(clock.Now()))

	// The first caller starts the fetch, then its request goes away.
	firstCtx, cancelFirst := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := v.Verify(firstCtx, tok); first <- err }()
	for srv.fetches.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() { _, err := v.Verify(context.Background(), tok); second <- err }()
	cancelFirst()

	// A waiter whose own request is gone stops waiting at once.
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := v.Verify(gone, tok)
	requireUnauthorized(t, err, "token signing key is unknown")

	// The shared fetch was not cancelled with its starter and serves the waiter.
	if err := <-second; err != nil {
		t.Fatalf("waiting caller: %v", err)
	}
	<-first
	if got := srv.fetches.Load(); got != 1 {
		t.Fatalf("%d fetches, want 1", got)
	}
}

func TestVerify_JWKSFile(t *testing.T) {
	t.Parallel()
	clock := testutil.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, defaultJWKS(t), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(Config{JWKSFile: path, Issuer: testIssuer, Audience: testAudience, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, tok := range map[string]string{
		"RS256": sign(t, jwt.SigningMethodRS256, testRSAKey(), rsaKid, baseClaims(clock.Now())),
		"ES256": sign(t, jwt.SigningMethodES256, testECKey(), ecKid, baseClaims(clock.Now())),
	} {
		p, err := v.Verify(ctx, tok)
		if err != nil || p.Subject != "alice" {
			t.Fatalf("%s: %+v, %v", name, p, err)
		}
	}
	_, err = v.Verify(ctx, sign(t, jwt.SigningMethodHS256, testSecret, "", baseClaims(clock.Now())))
	requireUnauthorized(t, err, "token signing algorithm is not accepted")

	// A rotated file is re-read on an unknown kid once the window has passed.
	if err := os.WriteFile(path, jwksDoc(t, jwkFor(t, "rsa-2", &testOtherRSAKey().PublicKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	rotated := sign(t, jwt.SigningMethodRS256, testOtherRSAKey(), "rsa-2", baseClaims(clock.Now()))
	_, err = v.Verify(ctx, rotated)
	requireUnauthorized(t, err, "token signing key is unknown")
	clock.Advance(time.Minute)
	if _, err := v.Verify(ctx, rotated); err != nil {
		t.Fatalf("rotated file: %v", err)
	}
}

func TestVerify_TokenWithoutKid(t *testing.T) {
	t.Parallel()
	clock := testutil.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	one := filepath.Join(dir, "one.json")
	two := filepath.Join(dir, "two.json")
	if err := os.WriteFile(one, jwksDoc(t, jwkFor(t, rsaKid, &testRSAKey().PublicKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(two, defaultJWKS(t), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := sign(t, jwt.SigningMethodRS256, testRSAKey(), "", baseClaims(clock.Now()))

	// A single-key set is unambiguous; with two keys a kid is required.
	v1, err := NewVerifier(Config{JWKSFile: one, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v1.Verify(context.Background(), tok); err != nil {
		t.Fatalf("single-key set: %v", err)
	}
	v2, err := NewVerifier(Config{JWKSFile: two, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v2.Verify(context.Background(), tok)
	requireUnauthorized(t, err, "token signing key is unknown")
}
