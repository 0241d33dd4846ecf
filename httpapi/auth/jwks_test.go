package auth

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slessio/sless/internal/testutil"
)

func TestParseJWKS(t *testing.T) {
	t.Parallel()
	rsaJWK := jwkFor(t, rsaKid, &testRSAKey().PublicKey)
	ecJWK := jwkFor(t, ecKid, &testECKey().PublicKey)
	b64 := base64.RawURLEncoding.EncodeToString

	// Keys we do not verify with sit next to real ones in provider sets.
	mixed := jwksDoc(t,
		rsaJWK, ecJWK,
		map[string]any{"kty": "oct", "kid": "hmac", "k": b64([]byte("secret"))},
		map[string]any{"kty": "EC", "kid": "p384", "crv": "P-384", "x": "AA", "y": "AA"},
		map[string]any{"kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": "AA"},
		with2(rsaJWK, "kid", "enc", "use", "enc"),
		with2(rsaJWK, "kid", "rs512", "alg", "RS512"),
	)
	keys, err := parseJWKS(mixed)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Fatalf("kept kids %v, want only %s and %s", keys, rsaKid, ecKid)
	}
	if _, ok := keys[rsaKid][0].key.(*rsa.PublicKey); !ok || !keys[rsaKid][0].accepts("RS256") || keys[rsaKid][0].accepts("ES256") {
		t.Fatalf("rsa key = %+v", keys[rsaKid])
	}
	if _, ok := keys[ecKid][0].key.(*ecdsa.PublicKey); !ok || !keys[ecKid][0].accepts("ES256") || keys[ecKid][0].accepts("RS256") {
		t.Fatalf("ec key = %+v", keys[ecKid])
	}

	// Padded base64url is tolerated.
	padded := with2(ecJWK, "x", ecJWK["x"].(string)+"=")
	if _, err := parseJWKS(jwksDoc(t, padded)); err != nil {
		t.Fatalf("padded: %v", err)
	}

	// A point off the curve is the classic invalid-curve attack.
	offCurve := with2(ecJWK, "y", b64(make([]byte, 32)))
	short := mustRSA(1024)
	bad := map[string][]byte{
		"not json":          []byte("{"),
		"no keys":           []byte(`{"keys":[]}`),
		"only unsupported":  jwksDoc(t, map[string]any{"kty": "oct", "k": "AA"}),
		"EC off curve":      jwksDoc(t, offCurve),
		"EC short x":        jwksDoc(t, with2(ecJWK, "x", b64(make([]byte, 31)))),
		"RSA 1024 bits":     jwksDoc(t, jwkFor(t, "small", &short.PublicKey)),
		"RSA exponent 1":    jwksDoc(t, with2(rsaJWK, "e", b64([]byte{1}))),
		"RSA even exponent": jwksDoc(t, with2(rsaJWK, "e", b64([]byte{1, 0, 0}))),
		"RSA bad base64":    jwksDoc(t, with2(rsaJWK, "n", "***")),
	}
	for name, doc := range bad {
		if _, err := parseJWKS(doc); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

func TestNewVerifier_JWKSFileWithoutUsableKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "jwks.json")
	small := mustRSA(1024)
	if err := os.WriteFile(path, jwksDoc(t, jwkFor(t, "small", &small.PublicKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := NewVerifier(Config{JWKSFile: path})
	testutil.RequireCode(t, err, "INVALID")
	if !strings.Contains(err.Error(), "at least 2048") {
		t.Fatalf("error does not say why: %v", err)
	}
}

// with2 returns a copy of m with the pairs in kv set.
func with2(m map[string]any, kv ...string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}
