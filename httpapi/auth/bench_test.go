package auth

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slessio/sless/internal/testutil"
)

// benchmarkVerify verifies one token again and again; with cacheSize -1
// every call checks the signature and claims, with 0 (the default cache)
// all but the first are cache hits.
func benchmarkVerify(b *testing.B, method jwt.SigningMethod, key any, kid string, cacheSize int) {
	clock := testutil.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	srv := newJWKSServer(b, defaultJWKS(b))
	v, err := NewVerifier(Config{HS256Secret: testSecret, JWKSURL: srv.URL, HTTPClient: srv.Client(), Now: clock.Now,
		Issuer: testIssuer, Audience: testAudience, TokenCacheSize: cacheSize})
	if err != nil {
		b.Fatal(err)
	}
	tok := sign(b, method, key, kid, baseClaims(clock.Now()))
	ctx := context.Background()
	if _, err := v.Verify(ctx, tok); err != nil { // warm the JWKS cache
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyHS256 measures a full check of an HS256 token (no cache).
func BenchmarkVerifyHS256(b *testing.B) {
	benchmarkVerify(b, jwt.SigningMethodHS256, testSecret, "", -1)
}

// BenchmarkVerifyRS256 measures a full check of an RS256 token (no cache).
func BenchmarkVerifyRS256(b *testing.B) {
	benchmarkVerify(b, jwt.SigningMethodRS256, testRSAKey(), rsaKid, -1)
}

// BenchmarkVerifyES256 measures a full check of an ES256 token (no cache).
func BenchmarkVerifyES256(b *testing.B) {
	benchmarkVerify(b, jwt.SigningMethodES256, testECKey(), ecKid, -1)
}

// BenchmarkVerifyCached measures the check of a token verified before:
// a SHA-256 and a cache lookup, whatever the algorithm.
func BenchmarkVerifyCached(b *testing.B) {
	benchmarkVerify(b, jwt.SigningMethodRS256, testRSAKey(), rsaKid, 0)
}
