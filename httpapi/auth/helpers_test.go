package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slessio/sless/domain"
)

// Key generation is the slow part of these tests, so each key is made once per run.
var (
	testRSAKey      = sync.OnceValue(func() *rsa.PrivateKey { return mustRSA(2048) })
	testOtherRSAKey = sync.OnceValue(func() *rsa.PrivateKey { return mustRSA(2048) })
	testECKey       = sync.OnceValue(func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	})
)

const (
	testIssuer   = "https://idp.example.test"
	testAudience = "sless-api"
	rsaKid       = "rsa-1"
	ecKid        = "ec-1"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func mustRSA(bits int) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		panic(err)
	}
	return k
}

// jwkFor renders a public key as a JWK map.
func jwkFor(tb testing.TB, kid string, pub any) map[string]any {
	tb.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
			"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
	case *ecdsa.PublicKey:
		raw, err := k.Bytes() // 0x04 || X || Y
		if err != nil {
			tb.Fatal(err)
		}
		return map[string]any{"kty": "EC", "kid": kid, "use": "sig", "crv": "P-256",
			"x": b64(raw[1:33]), "y": b64(raw[33:65])}
	}
	tb.Fatalf("unsupported key %T", pub)
	return nil
}

// jwksDoc renders a JWKS document of the given JWKs.
func jwksDoc(tb testing.TB, keys ...map[string]any) []byte {
	tb.Helper()
	data, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// defaultJWKS is the set holding the test RSA and EC keys.
func defaultJWKS(tb testing.TB) []byte {
	return jwksDoc(tb, jwkFor(tb, rsaKid, &testRSAKey().PublicKey), jwkFor(tb, ecKid, &testECKey().PublicKey))
}

// jwksServer serves a JWKS document and counts the fetches. Its fields can be
// changed between requests to rotate keys, fail or slow down.
type jwksServer struct {
	*httptest.Server
	fetches atomic.Int64
	mu      sync.Mutex
	doc     []byte
	status  int
	delay   time.Duration
}

func newJWKSServer(tb testing.TB, doc []byte) *jwksServer {
	tb.Helper()
	s := &jwksServer{doc: doc, status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		doc, status, delay := s.doc, s.status, s.delay
		s.mu.Unlock()
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(doc)
	}))
	tb.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(f func(s *jwksServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// baseClaims are valid claims for the test issuer and audience at now.
func baseClaims(now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"sub": "alice",
		"iss": testIssuer,
		"aud": testAudience,
		"iat": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
}

// sign returns a token over claims signed with method and key, with kid in the header when set.
func sign(tb testing.TB, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	tb.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// requireUnauthorized fails unless err is an EUNAUTHORIZED domain error with message want.
func requireUnauthorized(tb testing.TB, err error, want string) {
	tb.Helper()
	var derr *domain.Error
	if !errors.As(err, &derr) {
		tb.Fatalf("err = %v, want *domain.Error %q", err, want)
	}
	if derr.Code != domain.EUNAUTHORIZED || derr.Message != want {
		tb.Fatalf("err = %s %q, want %s %q", derr.Code, derr.Message, domain.EUNAUTHORIZED, want)
	}
}
