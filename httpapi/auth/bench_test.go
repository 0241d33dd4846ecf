package auth

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slessio/sless/internal/testutil"
)

func benchmarkVerify(b *testing.B, method jwt.SigningMethod, key any, kid string) {
	clock := testutil.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	srv := newJWKSServer(b, defaultJWKS(b))
	v, err := NewVerifier(Config{HS256Secret: testSecret, JWKSURL: srv.URL, HTTPClient: srv.Client(), Now: clock.Now,
		Issuer: testIssuer, Audience: testAudience})
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

func BenchmarkVerifyHS256(b *testing.B) {
	benchmarkVerify(b, jwt.SigningMethodHS256, testSecret, "")
}

func BenchmarkVerifyRS256(b *testing.B) {
	benchmarkVerify(b, jwt.SigningMethodRS256, testRSAKey(), rsaKid)
}

func BenchmarkVerifyES256(b *testing.B) {
	benchmarkVerify(b, jwt.SigningMethodES256, testECKey(), ecKid)
}
