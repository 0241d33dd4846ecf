package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slessio/sless/domain"
)

const (
	// DefaultLeeway is the clock skew tolerated on exp and nbf.
	DefaultLeeway = 30 * time.Second
	// DefaultAdminClaim is the claim that marks an operator token when set to true.
	DefaultAdminClaim = "sless_admin"
	// DefaultJWKSRefreshInterval is the shortest time between two JWKS reads
	// caused by unknown key ids.
	DefaultJWKSRefreshInterval = time.Minute

	// minSecretBytes is the HS256 key size RFC 7518 §3.2 requires.
	minSecretBytes = 32
	// maxTokenBytes bounds what we parse; real tokens are well under 4 KiB.
	maxTokenBytes = 16 << 10
)

// Config says which tokens a Verifier accepts. At least one key source must be
// set: HS256Secret, or one of JWKSFile and JWKSURL (not both).
type Config struct {
	// HS256Secret enables HS256 tokens signed with this key (at least 32 bytes).
	HS256Secret []byte
	// JWKSFile enables RS256/ES256 tokens whose keys are in this JWKS file.
	JWKSFile string
	// JWKSURL enables RS256/ES256 tokens whose keys are served at this http(s) URL.
	JWKSURL string
	// Issuer, when set, must equal the token's iss claim.
	Issuer string
	// Audience, when set, must be one of the token's aud values.
	Audience string
	// Leeway is the clock skew allowed on exp and nbf; zero means DefaultLeeway.
	Leeway time.Duration
	// AdminClaim names the boolean claim that marks operators; "" means DefaultAdminClaim.
	AdminClaim string
	// JWKSRefreshInterval is the shortest time between JWKS reads caused by
	// unknown key ids; zero means DefaultJWKSRefreshInterval.
	JWKSRefreshInterval time.Duration
	// HTTPClient fetches JWKSURL; nil means a client with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives JWKS refresh failures; nil means slog.Default().
	Logger *slog.Logger
	// TokenCacheSize is how many verified tokens are remembered until
	// their exp, so a token sent again is not verified again; zero means
	// DefaultTokenCacheSize, a negative value turns the cache off.
	TokenCacheSize int
}

// Principal is the verified caller of a request.
type Principal struct {
	// Subject is the token's sub claim.
	Subject string
	// Namespace is Namespace(Subject), the one namespace the caller owns.
	Namespace string
	// Admin is true when the token carries the admin claim set to true.
	Admin bool
	// ExpiresAt is the token's exp claim.
	ExpiresAt time.Time
	// Name is how the caller is called, for people (the console): the
	// token's name, preferred_username or email claim, the first that is a
	// non-empty string; "" when none is. It authorises nothing.
	Name string
}

// DisplayName is p's Name, else its Subject.
func (p Principal) DisplayName() string {
	if p.Name != "" {
		return p.Name
	}
	return p.Subject
}

// maxNameBytes bounds Principal.Name.
const maxNameBytes = 200

// nameOf is the Name of claims: the first of the name claims that is a
// non-empty string, on one line, at most maxNameBytes.
func nameOf(claims jwt.MapClaims) string {
	for _, k := range []string{"name", "preferred_username", "email"} {
		v, _ := claims[k].(string)
		v = strings.Join(strings.FieldsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
		if v != "" {
			return domain.Truncate(v, maxNameBytes)
		}
	}
	return ""
}

// Verifier checks Bearer tokens. It is safe for concurrent use.
type Verifier struct {
	secret     []byte
	keys       *keySet // nil when no JWKS is configured
	methods    []string
	parser     *jwt.Parser
	adminClaim string
	issuer     string
	audience   string
	now        func() time.Time
	cache      *tokenCache // nil when off
}

// NewVerifier returns a Verifier for cfg. A JWKSFile is read at once so a bad
// path or document fails at startup; a JWKSURL is fetched on first use, so the
// server can start while the identity provider is down. It returns EINVALID
// when cfg names no key source, both JWKS sources, a short secret, a negative
// duration, a bad URL, or an unreadable JWKS file.
func NewVerifier(cfg Config) (*Verifier, error) {
	if cfg.HS256Secret == nil && cfg.JWKSFile == "" && cfg.JWKSURL == "" {
		return nil, domain.Errorf(domain.EINVALID, "auth: configure an HS256 secret or a JWKS file or URL")
	}
	if cfg.JWKSFile != "" && cfg.JWKSURL != "" {
		return nil, domain.Errorf(domain.EINVALID, "auth: configure a JWKS file or a JWKS URL, not both")
	}
	if cfg.HS256Secret != nil && len(cfg.HS256Secret) < minSecretBytes {
		return nil, domain.Errorf(domain.EINVALID, "auth: HS256 secret must be at least %d bytes", minSecretBytes)
	}
	if cfg.Leeway < 0 || cfg.JWKSRefreshInterval < 0 {
		return nil, domain.Errorf(domain.EINVALID, "auth: leeway and JWKS refresh interval must not be negative")
	}
	cfg = withDefaults(cfg)

	v := &Verifier{adminClaim: cfg.AdminClaim, issuer: cfg.Issuer, audience: cfg.Audience, now: cfg.Now}
	if cfg.TokenCacheSize > 0 {
		v.cache = newTokenCache(cfg.TokenCacheSize)
	}
	if cfg.HS256Secret != nil {
		v.secret = slices.Clone(cfg.HS256Secret)
		v.methods = append(v.methods, "HS256")
	}
	if cfg.JWKSFile != "" || cfg.JWKSURL != "" {
		ks := &keySet{interval: cfg.JWKSRefreshInterval, now: cfg.Now, logger: cfg.Logger}
		if cfg.JWKSFile != "" {
			ks.source = fileSource(cfg.JWKSFile)
			keys, err := ks.load(context.Background())
			if err != nil {
				return nil, domain.Errorf(domain.EINVALID, "auth: %v", err)
			}
			ks.keys, ks.lastFetch = keys, cfg.Now()
		} else {
			u, err := url.Parse(cfg.JWKSURL)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return nil, domain.Errorf(domain.EINVALID, "auth: JWKS URL must be an absolute http(s) URL")
			}
			ks.source = urlSource(cfg.HTTPClient, cfg.JWKSURL)
		}
		v.keys = ks
		v.methods = append(v.methods, "RS256", "ES256")
	}

	opts := []jwt.ParserOption{
		jwt.WithValidMethods(v.methods),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// withDefaults fills the zero fields of cfg.
func withDefaults(cfg Config) Config {
	if cfg.Leeway == 0 {
		cfg.Leeway = DefaultLeeway
	}
	if cfg.AdminClaim == "" {
		cfg.AdminClaim = DefaultAdminClaim
	}
	if cfg.JWKSRefreshInterval == 0 {
		cfg.JWKSRefreshInterval = DefaultJWKSRefreshInterval
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: fetchTimeout}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TokenCacheSize == 0 {
		cfg.TokenCacheSize = DefaultTokenCacheSize
	}
	return cfg
}

// Verify checks the signature and claims of the raw token (without the
// "Bearer " prefix) and returns its Principal. A token it accepted lately
// is not checked again until its exp (the cache, Config.TokenCacheSize).
// Every failure is an EUNAUTHORIZED error whose message names the reason
// and nothing else.
func (v *Verifier) Verify(ctx context.Context, raw string) (Principal, error) {
	if raw == "" {
		return Principal{}, unauthorized("missing bearer token")
	}
	if len(raw) > maxTokenBytes {
		return Principal{}, unauthorized("token is too large")
	}
	if v.cache == nil {
		return v.verify(ctx, raw)
	}
	// The generation is read before the keys are: a refresh during the
	// check leaves the entry of an older generation, which is not trusted.
	key, gen, now := tokenKey(sha256.Sum256([]byte(raw))), v.generation(), v.now()
	if p, ok := v.cache.get(key, gen, now); ok {
		return p, nil
	}
	p, err := v.verify(ctx, raw)
	if err != nil {
		return Principal{}, err
	}
	v.cache.put(key, p, gen, now)
	return p, nil
}

// generation is the generation of the JWKS keys (keySet.generation); 0
// without a JWKS, whose one HS256 secret never changes.
func (v *Verifier) generation() uint64 {
	if v.keys == nil {
		return 0
	}
	return v.keys.generation()
}

// verify checks raw's signature and claims, without the cache.
func (v *Verifier) verify(ctx context.Context, raw string) (Principal, error) {
	claims := jwt.MapClaims{}
	tok, err := v.parser.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		return v.key(ctx, t)
	})
	if err != nil {
		return Principal{}, v.reject(tok, claims, err)
	}
	sub, err := claims.GetSubject()
	if err != nil || sub == "" {
		return Principal{}, unauthorized("token has no sub claim")
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		// Unreachable: WithExpirationRequired already checked it.
		return Principal{}, unauthorized("token has no exp claim")
	}
	admin, _ := claims[v.adminClaim].(bool)
	return Principal{Subject: sub, Namespace: Namespace(sub), Admin: admin, ExpiresAt: exp.Time, Name: nameOf(claims)}, nil
}

// key returns the verification key for t. The parser has already pinned the
// algorithm to v.methods, so an HS256 token only ever meets the shared secret
// and an RS256/ES256 token only a JWKS key of the matching type: a public key
// can never be used as an HMAC secret.
func (v *Verifier) key(ctx context.Context, t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	if alg == "HS256" && v.secret != nil {
		return v.secret, nil
	}
	if (alg != "RS256" && alg != "ES256") || v.keys == nil {
		return nil, unauthorized("token signing algorithm is not accepted")
	}
	kid, ok := t.Header["kid"].(string)
	if !ok && t.Header["kid"] != nil {
		return nil, unauthorized("token is malformed")
	}
	keys, err := v.keys.lookup(ctx, kid)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.accepts(alg) {
			return k.key, nil
		}
	}
	return nil, unauthorized("token signing key is unknown")
}

// reject turns a parser error into an EUNAUTHORIZED error with a short reason.
func (v *Verifier) reject(tok *jwt.Token, claims jwt.MapClaims, err error) error {
	var derr *domain.Error
	switch {
	case errors.As(err, &derr):
		return derr
	case errors.Is(err, jwt.ErrTokenMalformed):
		return unauthorized("token is malformed")
	case tok == nil || tok.Method == nil || !slices.Contains(v.methods, tok.Method.Alg()):
		// Unknown algorithms fail in ParseUnverified, known but unlisted ones
		// (none, HS256 without a secret, RS512...) in WithValidMethods.
		return unauthorized("token signing algorithm is not accepted")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return unauthorized("token signature is invalid")
	case errors.Is(err, jwt.ErrTokenExpired):
		return unauthorized("token has expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return unauthorized("token is not valid yet")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return unauthorized("token has no %s claim", v.missingClaim(claims))
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return unauthorized("token issuer is not accepted")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return unauthorized("token audience is not accepted")
	}
	return unauthorized("token is invalid")
}

// missingClaim names the first required claim absent (or empty) in claims.
func (v *Verifier) missingClaim(claims jwt.MapClaims) string {
	if exp, err := claims.GetExpirationTime(); err == nil && exp == nil {
		return "exp"
	}
	if iss, err := claims.GetIssuer(); v.issuer != "" && err == nil && iss == "" {
		return "iss"
	}
	return "aud"
}

// unauthorized returns an EUNAUTHORIZED domain error.
func unauthorized(format string, args ...any) error {
	return domain.Errorf(domain.EUNAUTHORIZED, format, args...)
}
