package httpapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/big"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/apitest"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore/s3embed"
	"github.com/slessio/sless/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	testIssuer   = "https://idp.example.test"
	testAudience = "sless-api"
	rsaKid       = "rsa-1"
	externalURL  = "http://sless.example.test"
)

var (
	testSecret = []byte("httpapi-test-secret-0123456789abcdef")
	testRSAKey = sync.OnceValue(func() *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		return k
	})
)

// fixture is a real API server on real PostgreSQL and a real S3 server.
type fixture struct {
	t     testing.TB
	url   string
	api   *httpapi.Server
	store *store.Store
	pool  *pgxpool.Pool
	s3    *s3embed.Server
	clock *clock
	// verifier is the API's token verifier.
	verifier *auth.Verifier
}

// clock is the server's clock; tests that need time to stand still (rate
// limits) freeze it.
type clock struct {
	frozen atomic.Int64 // unix nanos; 0 means the real time
}

func (c *clock) Now() time.Time {
	if ns := c.frozen.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Now()
}

func (c *clock) Freeze(t time.Time)      { c.frozen.Store(t.UnixNano()) }
func (c *clock) Advance(d time.Duration) { c.frozen.Add(int64(d)) }

// setup starts an embedded S3 server, a Store with an insert-only River
// client on the package's shared database, and the API behind httptest.
// configure may change the Config before New.
func setup(t testing.TB, configure ...func(*httpapi.Config)) *fixture {
	t.Helper()
	verifier := newVerifier(t)
	clk := &clock{}
	srv := apitest.Start(t, func(cfg *httpapi.Config) {
		cfg.Verifier, cfg.ExternalURL, cfg.Now = verifier, externalURL+"/", clk.Now
		for _, f := range configure {
			f(cfg)
		}
	})
	return &fixture{t: t, url: srv.URL, api: srv.API, store: srv.Store, pool: srv.Pool, s3: srv.S3, clock: clk, verifier: verifier}
}

// newVerifier returns the verifier of the tests' servers: HS256 with
// testSecret, RS256 with testRSAKey under rsaKid, testIssuer and
// testAudience; configure may change its Config.
func newVerifier(t testing.TB, configure ...func(*auth.Config)) *auth.Verifier {
	t.Helper()
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, jwksDoc(&testRSAKey().PublicKey), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := auth.Config{HS256Secret: testSecret, JWKSFile: jwks, Issuer: testIssuer, Audience: testAudience}
	for _, f := range configure {
		f(&cfg)
	}
	verifier, err := auth.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return verifier
}

// jwksDoc is a JWKS holding pub under rsaKid.
func jwksDoc(pub *rsa.PublicKey) []byte {
	b64 := base64.RawURLEncoding.EncodeToString
	doc, _ := json.Marshal(map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "kid": rsaKid, "use": "sig", "alg": "RS256",
		"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes()),
	}}})
	return doc
}

// uniqueSub returns a token subject (hence a namespace) no other test uses.
func uniqueSub(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "user-" + hex.EncodeToString(b)
}

// claims are valid claims for sub.
func claims(sub string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"sub": sub, "iss": testIssuer, "aud": testAudience, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// sign signs c with method and key; kid goes in the header when set.
func sign(t testing.TB, method jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// client calls the API as one caller.
type client struct {
	f     *fixture
	sub   string
	ns    string
	token string
}

// tenant returns a client for a fresh namespace.
func (f *fixture) tenant() *client {
	sub := uniqueSub(f.t)
	return &client{f: f, sub: sub, ns: auth.Namespace(sub), token: sign(f.t, jwt.SigningMethodHS256, testSecret, "", claims(sub))}
}

// admin returns an operator client (with its own namespace).
func (f *fixture) admin() *client {
	c := f.tenant()
	cl := claims(c.sub)
	cl["sless_admin"] = true
	c.token = sign(f.t, jwt.SigningMethodHS256, testSecret, "", cl)
	return c
}

// anonymous returns a client without a token.
func (f *fixture) anonymous() *client { return &client{f: f} }

// on returns a copy of c that reports to t (a subtest).
func (c *client) on(t *testing.T) *client {
	f := *c.f
	f.t = t
	c2 := *c
	c2.f = &f
	return &c2
}

// p is a path below the client's namespace.
func (c *client) p(path string) string { return "/v1/namespaces/" + c.ns + path }

// response is an API answer, read whole.
type response struct {
	t      testing.TB
	status int
	header http.Header
	body   []byte
}

// do sends a request; body is JSON-encoded unless it is a string or []byte.
func (c *client) do(method, path string, body any, headers ...string) *response {
	c.f.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.f.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.f.url+path, r)
	if err != nil {
		c.f.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return c.send(req)
}

func (c *client) send(req *http.Request) *response {
	c.f.t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.f.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		c.f.t.Fatal(err)
	}
	return &response{t: c.f.t, status: res.StatusCode, header: res.Header, body: data}
}

// upload posts zip as the multipart field "code".
func (c *client) upload(function string, zip []byte) *response {
	c.f.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, err := mw.CreateFormFile("code", "code.zip")
	if err != nil {
		c.f.t.Fatal(err)
	}
	w.Write(zip)
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, c.f.url+c.p("/functions/"+function+"/upload"), &buf)
	if err != nil {
		c.f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+c.token)
	return c.send(req)
}

// want fails unless the status is status; it returns r for chaining.
func (r *response) want(status int) *response {
	r.t.Helper()
	if r.status != status {
		r.t.Fatalf("status %d, want %d; body: %s", r.status, status, r.body)
	}
	return r
}

// decode unmarshals the body into v.
func (r *response) decode(v any) {
	r.t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		r.t.Fatalf("decode %s: %v", r.body, err)
	}
}

// obj decodes the body as a JSON object.
func (r *response) obj() map[string]any {
	r.t.Helper()
	var m map[string]any
	r.decode(&m)
	return m
}

// apiError is the error shape.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"error"`
}

// wantError fails unless the answer is the error shape with status and code,
// and (when given) field, and a message containing every part.
func (r *response) wantError(status int, code, field string, msgParts ...string) apiError {
	r.t.Helper()
	r.want(status)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		r.t.Fatalf("error Content-Type %q, want JSON", ct)
	}
	var e apiError
	r.decode(&e)
	if e.Error.Code != code || e.Error.Field != field || e.Error.Message == "" {
		r.t.Fatalf("error %+v, want code %s field %q; body %s", e.Error, code, field, r.body)
	}
	for _, p := range msgParts {
		if !strings.Contains(e.Error.Message, p) {
			r.t.Fatalf("error message %q does not mention %q", e.Error.Message, p)
		}
	}
	return e
}

// createFunction creates a python function named name.
func (c *client) createFunction(name string) map[string]any {
	c.f.t.Helper()
	return c.do("POST", c.p("/functions"), map[string]any{"name": name, "runtime": "python3.11"}).want(201).obj()
}

// countJobs counts the River jobs of kind inserted for the namespace, with
// args matching every key/value pair of match.
// runState is the River state of the run of job ns/job (one run expected).
func (f *fixture) runState(ns, job string) string {
	f.t.Helper()
	var state string
	if err := f.pool.QueryRow(context.Background(), `SELECT state FROM river_job WHERE kind = 'run_job' AND args @> $1::jsonb`,
		`{"namespace": "`+ns+`", "job": "`+job+`"}`).Scan(&state); err != nil {
		f.t.Fatalf("the run of job %s: %v", job, err)
	}
	return state
}

func (f *fixture) countJobs(kind, ns string, match ...string) int {
	f.t.Helper()
	args := map[string]any{"namespace": ns}
	for i := 0; i+1 < len(match); i += 2 {
		args[match[i]] = match[i+1]
	}
	filter, _ := json.Marshal(args)
	// Numbers in match are compared as JSON numbers too.
	var n int
	err := f.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM river_job WHERE kind = $1 AND args @> $2::jsonb`, kind, fixNumbers(string(filter))).Scan(&n)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// fixNumbers turns "version":"3" into "version":3 in a JSON filter.
func fixNumbers(filter string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(filter), &m)
	for _, k := range []string{"version", "run_id"} {
		if s, ok := m[k].(string); ok {
			m[k] = json.Number(s)
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// execute runs a domain command on a function as a worker would, to
// simulate build outcomes without running a worker.
func (f *fixture) execute(ns, name string, cmd func(fn *domain.Function) ([]domain.Event, error)) {
	f.t.Helper()
	if err := apitest.Record(context.Background(), f.store, ns, name, cmd); err != nil {
		f.t.Fatal(err)
	}
}

// build marks version n of a function as built (or failed when msg is set).
func (f *fixture) build(ns, name string, n int, failMsg string) {
	f.t.Helper()
	f.execute(ns, name, func(fn *domain.Function) ([]domain.Event, error) {
		if failMsg != "" {
			return fn.FailBuild(n, failMsg, "build log of a failure", time.Now())
		}
		return fn.SucceedBuild(n, "image:v"+strconv.Itoa(n), "build log of version "+strconv.Itoa(n), time.Now())
	})
}
