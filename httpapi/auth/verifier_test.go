package auth

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slessio/sless/internal/testutil"
)

// setupVerifier returns a Verifier accepting HS256 with testSecret and
// RS256/ES256 from a JWKS served over HTTP, with issuer and audience checks.
func setupVerifier(t *testing.T, mod func(*Config)) (*Verifier, *testutil.FakeClock, *jwksServer) {
	t.Helper()
	clock := testutil.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	srv := newJWKSServer(t, defaultJWKS(t))
	cfg := Config{
		HS256Secret: testSecret,
		JWKSURL:     srv.URL,
		Issuer:      testIssuer,
		Audience:    testAudience,
		HTTPClient:  srv.Client(),
		Now:         clock.Now,
	}
	if mod != nil {
		mod(&cfg)
	}
	v, err := NewVerifier(cfg)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v, clock, srv
}

// with returns a copy of c with the given claims set, and deleted when the value is nil.
func with(c jwt.MapClaims, kv ...any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for k, v := range c {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

// rsaPublicPEM is what an attacker would use as the HMAC secret in an RS→HS confusion attack.
func rsaPublicPEM(t *testing.T) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&testRSAKey().PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// unsignedToken builds header.payload. with an empty signature, as alg:none tokens are.
func unsignedToken(t *testing.T, header string, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	payload := strings.Split(tok, ".")[1]
	return base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + payload + "."
}

func TestVerify_TokenTable(t *testing.T) {
	t.Parallel()
	v, clock, _ := setupVerifier(t, nil)
	now := clock.Now()
	good := baseClaims(now)
	rsa, ec := testRSAKey(), testECKey()

	tampered := func() string {
		// Swap the payload of a valid token for one naming another subject.
		parts := strings.Split(sign(t, jwt.SigningMethodRS256, rsa, rsaKid, good), ".")
		evil, _ := jwt.NewWithClaims(jwt.SigningMethodRS256, with(good, "sub", "mallory")).SigningString()
		parts[1] = strings.Split(evil, ".")[1]
		return strings.Join(parts, ".")
	}

	tests := []struct {
		name    string
		token   string
		wantErr string // "" means the token is accepted
		wantSub string
	}{
		{"valid RS256", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, good), "", "alice"},
		{"valid ES256", sign(t, jwt.SigningMethodES256, ec, ecKid, good), "", "alice"},
		{"valid HS256", sign(t, jwt.SigningMethodHS256, testSecret, "", good), "", "alice"},
		{"aud as list containing ours", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, with(good, "aud", []string{"other", testAudience})), "", "alice"},
		{"expired within leeway", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, with(good, "exp", now.Add(-10*time.Second).Unix())), "", "alice"},
		{"nbf within leeway", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, with(good, "nbf", now.Add(10*time.Second).Unix())), "", "alice"},

		{"empty", "", "missing bearer token", ""},
		{"garbage", "not-a-jwt", "token is malformed", ""},
		{"oversized", strings.Repeat("a", maxTokenBytes+1), "token is too large", ""},
		{"bad RS256 signature", sign(t, jwt.SigningMethodRS256, testOtherRSAKey(), rsaKid, good), "token signature is invalid", ""},
		{"bad HS256 signature", sign(t, jwt.SigningMethodHS256, []byte("another-secret-another-secret-xx"), "", good), "token signature is invalid", ""},
		{"changed sub", tampered(), "token signature is invalid", ""},
		{"alg none", unsignedToken(t, `{"alg":"none","typ":"JWT"}`, good), "token signing algorithm is not accepted", ""},
		{"alg None", unsignedToken(t, `{"alg":"None","typ":"JWT"}`, good), "token signing algorithm is not accepted", ""},
		{"HS256 signed with RSA public key PEM", sign(t, jwt.SigningMethodHS256, rsaPublicPEM(t), rsaKid, good), "token signature is invalid", ""},
		{"RS512 not accepted", sign(t, jwt.SigningMethodRS512, rsa, rsaKid, good), "token signing algorithm is not accepted", ""},
		{"RS256 naming the EC key", sign(t, jwt.SigningMethodRS256, rsa, ecKid, good), "token signing key is unknown", ""},
		{"expired beyond leeway", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, with(good, "exp", now.Add(-2*time.Minute).Unix())), "token has expired", ""},
		{"nbf in the future", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, with(good, "nbf", now.Add(2*time.Minute).Unix())), "token is not valid yet", ""},
		{"wrong issuer", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, with(good, "iss", "https://evil.example")), "token issuer is not accepted", ""},
		{"missing issuer", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, with(good, "iss", nil)), "token has no iss claim", ""},
		{"wrong audience", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, with(good, "aud", "other-api")), "token audience is not accepted", ""},
		{"missing audience", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, with(good, "aud", nil)), "token has no aud claim", ""},
		{"missing sub", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, with(good, "sub", nil)), "token has no sub claim", ""},
		{"empty sub", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, with(good, "sub", "")), "token has no sub claim", ""},
		{"missing exp", sign(t, jwt.SigningMethodRS256, rsa, rsaKid, with(good, "exp", nil)), "token has no exp claim", ""},
		{"unknown kid", sign(t, jwt.SigningMethodRS256, rsa, "rotated-away", good), "token signing key is unknown", ""},
		{"non-string kid", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, good)
			tok.Header["kid"] = 7
			s, _ := tok.SignedString(rsa)
			return s
		}(), "token is malformed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := v.Verify(context.Background(), tt.token)
			if tt.wantErr != "" {
				requireUnauthorized(t, err, tt.wantErr)
				if p != (Principal{}) {
					t.Fatalf("rejected token returned principal %+v", p)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if p.Subject != tt.wantSub || p.Namespace != Namespace(tt.wantSub) || p.Admin {
				t.Fatalf("principal = %+v", p)
			}
		})
	}
}

func TestVerify_ConfusionWithoutSecret(t *testing.T) {
	t.Parallel()
	// With only a JWKS configured there is no HMAC key at all: HS256 must be
	// refused before any key is looked up, whatever secret the attacker used.
	v, clock, _ := setupVerifier(t, func(c *Config) { c.HS256Secret = nil })
	now := clock.Now()
	for name, secret := range map[string][]byte{"pem": rsaPublicPEM(t), "random": []byte("0123456789abcdef0123456789abcdef")} {
		tok := sign(t, jwt.SigningMethodHS256, secret, rsaKid, baseClaims(now))
		_, err := v.Verify(context.Background(), tok)
		if err == nil {
			t.Fatalf("%s: HS256 token accepted by a JWKS-only verifier", name)
		}
		requireUnauthorized(t, err, "token signing algorithm is not accepted")
	}
	// RS256 still works.
	if _, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, testRSAKey(), rsaKid, baseClaims(now))); err != nil {
		t.Fatalf("RS256: %v", err)
	}
}

func TestVerify_HSOnlyRefusesAsymmetric(t *testing.T) {
	t.Parallel()
	clock := testutil.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	v, err := NewVerifier(Config{HS256Secret: testSecret, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, testRSAKey(), rsaKid, baseClaims(clock.Now())))
	requireUnauthorized(t, err, "token signing algorithm is not accepted")
}

func TestVerify_PrincipalAndClock(t *testing.T) {
	t.Parallel()
	v, clock, _ := setupVerifier(t, nil)
	now := clock.Now()
	sub := "019cc268-6c6a-781e-8613-4bed4ec7cd20"
	exp := now.Add(90 * time.Second)
	tok := sign(t, jwt.SigningMethodES256, testECKey(), ecKid, with(baseClaims(now), "sub", sub, "exp", exp.Unix()))

	p, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	want := Principal{Subject: sub, Namespace: "sless-ffd1f598c169b0ae", ExpiresAt: exp}
	if !p.ExpiresAt.Equal(want.ExpiresAt) || p.Subject != want.Subject || p.Namespace != want.Namespace || p.Admin {
		t.Fatalf("principal = %+v, want %+v", p, want)
	}

	// The verifier uses the configured clock: the same token expires once the
	// clock passes exp plus the 30 s leeway, and not a second before.
	clock.Advance(90*time.Second + 29*time.Second)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("within leeway: %v", err)
	}
	clock.Advance(2 * time.Second)
	_, err = v.Verify(context.Background(), tok)
	requireUnauthorized(t, err, "token has expired")
}

func TestVerify_CustomLeeway(t *testing.T) {
	t.Parallel()
	v, clock, _ := setupVerifier(t, func(c *Config) { c.Leeway = 5 * time.Second })
	now := clock.Now()
	tok := sign(t, jwt.SigningMethodHS256, testSecret, "", with(baseClaims(now), "exp", now.Add(-10*time.Second).Unix()))
	_, err := v.Verify(context.Background(), tok)
	requireUnauthorized(t, err, "token has expired")
}

func TestVerify_NoIssuerOrAudienceConfigured(t *testing.T) {
	t.Parallel()
	v, clock, _ := setupVerifier(t, func(c *Config) { c.Issuer, c.Audience = "", "" })
	tok := sign(t, jwt.SigningMethodHS256, testSecret, "", with(baseClaims(clock.Now()), "iss", nil, "aud", nil))
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestVerify_AdminClaim(t *testing.T) {
	t.Parallel()
	v, clock, _ := setupVerifier(t, nil)
	custom, _, _ := setupVerifier(t, func(c *Config) { c.AdminClaim = "https://sless.io/operator" })
	now := clock.Now()

	tests := []struct {
		name  string
		v     *Verifier
		extra []any
		want  bool
	}{
		{"true", v, []any{"sless_admin", true}, true},
		{"false", v, []any{"sless_admin", false}, false},
		{"string true is not a boolean", v, []any{"sless_admin", "true"}, false},
		{"number 1 is not a boolean", v, []any{"sless_admin", 1}, false},
		{"absent", v, nil, false},
		{"custom claim", custom, []any{"https://sless.io/operator", true}, true},
		{"default claim ignored when renamed", custom, []any{"sless_admin", true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok := sign(t, jwt.SigningMethodRS256, testRSAKey(), rsaKid, with(baseClaims(now), tt.extra...))
			p, err := tt.v.Verify(context.Background(), tok)
			if err != nil {
				t.Fatal(err)
			}
			if p.Admin != tt.want {
				t.Fatalf("Admin = %v, want %v", p.Admin, tt.want)
			}
		})
	}
}

func TestNewVerifier_Config(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no key source", Config{}},
		{"short secret", Config{HS256Secret: []byte("short")}},
		{"both JWKS sources", Config{JWKSFile: "a.json", JWKSURL: "https://idp.example/jwks"}},
		{"relative URL", Config{JWKSURL: "/jwks.json"}},
		{"non-http URL", Config{JWKSURL: "file:///etc/jwks.json"}},
		{"missing JWKS file", Config{JWKSFile: dir + "/nope.json"}},
		{"negative leeway", Config{HS256Secret: testSecret, Leeway: -time.Second}},
		{"negative refresh interval", Config{HS256Secret: testSecret, JWKSRefreshInterval: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := NewVerifier(tt.cfg)
			if v != nil {
				t.Fatal("got a verifier for a bad config")
			}
			testutil.RequireCode(t, err, "INVALID")
		})
	}
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]string{
		"Bearer abc.def.ghi":   "abc.def.ghi",
		"bearer abc.def.ghi":   "abc.def.ghi",
		"BEARER  abc.def.ghi ": "abc.def.ghi",
		"":                     "",
		"Bearer":               "",
		"Bearer   ":            "",
		"Basic YWxpY2U6cHc=":   "",
		"abc.def.ghi":          "",
	} {
		got, err := BearerToken(header)
		if want == "" {
			requireUnauthorized(t, err, "missing bearer token")
			continue
		}
		if err != nil || got != want {
			t.Fatalf("BearerToken(%q) = %q, %v; want %q", header, got, err, want)
		}
	}
}

// TestVerify_Name: the Principal's Name is the token's name, else
// preferred_username, else email claim (the first non-empty string), on
// one line and bounded; DisplayName falls back to the subject.
func TestVerify_Name(t *testing.T) {
	t.Parallel()
	v, clock, _ := setupVerifier(t, nil)
	long := strings.Repeat("é", 300)
	for _, tc := range []struct {
		kv   []any
		want string
	}{
		{[]any{"name", "Ada Lovelace", "preferred_username", "ada", "email", "ada@example.com"}, "Ada Lovelace"},
		{[]any{"name", "  ", "preferred_username", "ada", "email", "ada@example.com"}, "ada"},
		{[]any{"name", 42, "email", "ada@example.com"}, "ada@example.com"},
		{[]any{"name", "Ada\r\nSet-Cookie: x\t Lovelace"}, "Ada Set-Cookie: x Lovelace"},
		{nil, ""},
	} {
		tok := sign(t, jwt.SigningMethodHS256, testSecret, "", with(baseClaims(clock.Now()), tc.kv...))
		p, err := v.Verify(context.Background(), tok)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.want
		if want == "" {
			want = p.Subject
		}
		if p.Name != tc.want || p.DisplayName() != want {
			t.Errorf("claims %v: name %q, display %q; want %q", tc.kv, p.Name, p.DisplayName(), tc.want)
		}
	}
	tok := sign(t, jwt.SigningMethodHS256, testSecret, "", with(baseClaims(clock.Now()), "name", long))
	if p, err := v.Verify(context.Background(), tok); err != nil || len(p.Name) > 200 || !utf8.ValidString(p.Name) {
		t.Fatalf("a long name: %q (%d bytes), %v", p.Name, len(p.Name), err)
	}
}
