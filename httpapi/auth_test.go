package httpapi_test

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/auth"
)

func TestBadTokensAre401(t *testing.T) {
	t.Parallel()
	f := setup(t)
	sub := uniqueSub(t)
	now := time.Now()
	with := func(change func(jwt.MapClaims)) jwt.MapClaims {
		c := claims(sub)
		change(c)
		return c
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&testRSAKey().PublicKey))})
	unsigned, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims(sub)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, header, message string
	}{
		{"no header", "", "missing bearer token"},
		{"basic auth", "Basic dXNlcjpwYXNz", "missing bearer token"},
		{"garbage", "Bearer not.a.jwt", "token is malformed"},
		{"bad signature", "Bearer " + sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef-xx"), "", claims(sub)), "token signature is invalid"},
		{"alg none", "Bearer " + unsigned, "token signing algorithm is not accepted"},
		{"HS256 signed with the RSA public key", "Bearer " + sign(t, jwt.SigningMethodHS256, pubPEM, rsaKid, claims(sub)), "token signature is invalid"},
		{"expired", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, "", with(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() })), "token has expired"},
		{"not yet valid", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, "", with(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() })), "token is not valid yet"},
		{"wrong issuer", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, "", with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })), "token issuer is not accepted"},
		{"wrong audience", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, "", with(func(c jwt.MapClaims) { c["aud"] = "other-api" })), "token audience is not accepted"},
		{"no sub", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, "", with(func(c jwt.MapClaims) { delete(c, "sub") })), "token has no sub claim"},
		{"no exp", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, "", with(func(c jwt.MapClaims) { delete(c, "exp") })), "token has no exp claim"},
	}
	c := f.anonymous()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.on(t).do("GET", "/v1/namespaces/sless-0000000000000000/functions", nil, "Authorization", tc.header)
			r.wantError(401, "UNAUTHORIZED", "", tc.message)
			if got := r.header.Get("WWW-Authenticate"); got == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
		})
	}

	// The same route answers with good tokens, HS256 and RS256 (JWKS) alike.
	hs := f.tenant()
	hs.do("GET", hs.p("/functions"), nil).want(200)
	rs := &client{f: f, sub: sub, ns: auth.Namespace(sub), token: sign(t, jwt.SigningMethodRS256, testRSAKey(), rsaKid, claims(sub))}
	rs.do("GET", rs.p("/functions"), nil).want(200)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestCrossNamespaceIsForbiddenAndRevealsNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	alice, bob := f.tenant(), f.tenant()
	bob.createFunction("secret")
	bob.do("POST", bob.p("/triggers"), map[string]any{"name": "web", "type": "http", "function": "secret"}).want(201)
	bob.do("POST", bob.p("/jobs"), map[string]any{"name": "once", "function": "secret"}).want(201)

	var messages []string
	for _, probe := range []struct{ method, path string }{
		{"GET", "/functions"},
		{"GET", "/functions/secret"},
		{"GET", "/functions/does-not-exist"},
		{"GET", "/functions/secret/source"},
		{"GET", "/functions/secret/versions"},
		{"POST", "/functions/secret/invoke"},
		{"PUT", "/functions/secret"},
		{"DELETE", "/functions/secret"},
		{"GET", "/triggers/web"},
		{"PATCH", "/triggers/web"},
		{"GET", "/jobs/once"},
		{"DELETE", "/jobs/once"},
		{"GET", "/events"},
		{"POST", "/ensure"},
	} {
		for _, ns := range []string{bob.ns, "sless-0123456789abcdef"} { // existing and not
			body := any(nil)
			if probe.method == "PUT" || probe.method == "PATCH" {
				body = map[string]any{"enabled": false}
			}
			e := alice.do(probe.method, "/v1/namespaces/"+ns+probe.path, body).wantError(403, "FORBIDDEN", "")
			messages = append(messages, e.Error.Message)
		}
	}
	for _, m := range messages {
		if m != messages[0] {
			t.Fatalf("403 messages differ (%q vs %q): they must not tell namespaces apart", m, messages[0])
		}
		if strings.Contains(m, bob.ns) || strings.Contains(m, "secret") || strings.Contains(m, "sless-0123456789abcdef") {
			t.Fatalf("403 message %q names the foreign namespace or its function", m)
		}
		if !strings.Contains(m, alice.ns) {
			t.Fatalf("403 message %q does not say which namespace the token belongs to (%s)", m, alice.ns)
		}
	}
	// Bob's things are untouched.
	bob.do("GET", bob.p("/functions/secret"), nil).want(200)
	bob.do("GET", bob.p("/jobs/once"), nil).want(200)
	if bob.do("GET", bob.p("/triggers/web"), nil).want(200).obj()["enabled"] != true {
		t.Fatal("alice's PATCH changed bob's trigger")
	}
}

func TestOperatorsReadEveryNamespaceButWriteOnlyTheirs(t *testing.T) {
	t.Parallel()
	riverUI := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("river ui at " + r.URL.Path))
	})
	f := setup(t, func(c *httpapi.Config) { c.RiverUI = riverUI })
	op, tenant := f.admin(), f.tenant()
	tenant.do("POST", tenant.p("/ensure"), nil).want(201)
	tenant.createFunction("hello")

	// Reads of another namespace: allowed.
	op.do("GET", tenant.p("/functions"), nil).want(200)
	op.do("GET", tenant.p("/functions/hello"), nil).want(200)
	// Writes: not.
	op.do("POST", tenant.p("/functions"), map[string]any{"name": "x", "runtime": "go1.23"}).wantError(403, "FORBIDDEN", "")
	op.do("DELETE", tenant.p("/functions/hello"), nil).wantError(403, "FORBIDDEN", "")
	op.do("POST", tenant.p("/functions/hello/invoke"), nil).wantError(403, "FORBIDDEN", "") // running it is not reading it

	// GET /v1/namespaces is for operators only.
	var list struct {
		Namespaces []struct {
			Name      string `json:"name"`
			Functions int    `json:"functions"`
		} `json:"namespaces"`
	}
	op.do("GET", "/v1/namespaces", nil).want(200).decode(&list)
	found := false
	for _, n := range list.Namespaces {
		if n.Name == tenant.ns {
			found = n.Functions == 1
		}
	}
	if !found {
		t.Fatalf("namespace %s with 1 function not in %+v", tenant.ns, list)
	}
	tenant.do("GET", "/v1/namespaces", nil).wantError(403, "FORBIDDEN", "")
	f.anonymous().do("GET", "/v1/namespaces", nil).wantError(401, "UNAUTHORIZED", "")

	// The River UI likewise.
	if r := op.do("GET", "/riverui/jobs", nil).want(200); string(r.body) != "river ui at /riverui/jobs" {
		t.Fatalf("river ui answered %q", r.body)
	}
	tenant.do("GET", "/riverui/jobs", nil).wantError(403, "FORBIDDEN", "")
	f.anonymous().do("GET", "/riverui/", nil).wantError(401, "UNAUTHORIZED", "")
}

func TestRateLimitPerNamespace(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *httpapi.Config) { c.RateLimit, c.RateBurst = 1, 3 })
	f.clock.Freeze(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	a, b := f.tenant(), f.tenant()
	for range 3 {
		a.do("GET", a.p("/functions"), nil).want(200)
	}
	r := a.do("GET", a.p("/functions"), nil)
	r.wantError(429, "RATE_LIMITED", "")
	if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || secs < 1 {
		t.Fatalf("Retry-After %q, want whole seconds ≥ 1", r.header.Get("Retry-After"))
	}
	// The bucket is the verified namespace's, not the client address's, and
	// a forwarded-for header changes nothing.
	b.do("GET", b.p("/functions"), nil).want(200)
	a.do("GET", a.p("/functions"), nil, "X-Forwarded-For", "203.0.113.7").want(429)
	// Another token of the same subject shares the bucket.
	a2 := &client{f: f, ns: a.ns, token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims(a.sub))}
	a2.do("GET", a2.p("/functions"), nil).want(429)

	f.clock.Advance(time.Second)
	a.do("GET", a.p("/functions"), nil).want(200)
	a.do("GET", a.p("/functions"), nil).want(429)
}

func TestRequestIDIsKeptOrGeneratedAndRecorded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	r := c.do("POST", c.p("/functions"), map[string]any{"name": "traced", "runtime": "nodejs20"}, "X-Request-Id", "req-abc.123")
	r.want(201)
	if got := r.header.Get("X-Request-Id"); got != "req-abc.123" {
		t.Fatalf("X-Request-Id %q, want the client's", got)
	}
	r = c.do("PUT", c.p("/functions/traced"), map[string]any{"memory_mb": 256}, "X-Request-Id", "bad id\twith spaces")
	r.want(200)
	generated := r.header.Get("X-Request-Id")
	if !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(generated) {
		t.Fatalf("generated X-Request-Id %q is not a UUID", generated)
	}
	var log struct {
		Events []struct {
			Type      string `json:"type"`
			Actor     string `json:"actor"`
			RequestID string `json:"request_id"`
		} `json:"events"`
	}
	c.do("GET", c.p("/events?stream=function/traced"), nil).want(200).decode(&log)
	if len(log.Events) != 2 {
		t.Fatalf("events %+v, want created and config_updated", log.Events)
	}
	want := []struct{ typ, rid string }{{"function.created", "req-abc.123"}, {"function.config_updated", generated}}
	for i, w := range want {
		e := log.Events[i]
		if e.Type != w.typ || e.RequestID != w.rid || e.Actor != c.sub {
			t.Fatalf("event %d = %+v, want type %s, request id %s, actor %s", i, e, w.typ, w.rid, c.sub)
		}
	}
}
