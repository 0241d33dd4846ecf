package httpapi

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/console"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/invoke"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore"
)

// Defaults of Config.
const (
	DefaultRateLimit            = 50       // requests per second per namespace
	DefaultRateBurst            = 200      // requests per namespace at once
	DefaultMaxUploadBytes       = 32 << 20 // SPEC §2: a zip of at most 32 MiB
	DefaultMaxConcurrentUploads = 4
	// maxJSONBytes caps a JSON request body; the largest field (a job's
	// event) is capped at 256 KiB by the domain.
	maxJSONBytes = 1 << 20
)

// Config wires a Server to the store, the code store and the token verifier.
type Config struct {
	// Store holds events, read models and the River outbox. Required.
	Store *store.Store
	// Code stores uploaded zips and build contexts in S3. Required.
	Code *codestore.Store
	// Verifier checks Bearer tokens. Required.
	Verifier *auth.Verifier
	// ExternalURL is the public base URL of trigger URLs, e.g.
	// http://localhost:8080 (a trailing slash is dropped). Required.
	ExternalURL string
	// BaseImage names the image the generated Dockerfile of a runtime starts
	// FROM; nil means "sless/runtime-<runtime>:latest".
	BaseImage func(runtime string) string
	// RateLimit is the sustained number of /v1 requests per second each
	// namespace may make (token bucket); 0 means DefaultRateLimit, a negative
	// value turns the limit off.
	RateLimit float64
	// RateBurst is the bucket size; 0 means DefaultRateBurst.
	RateBurst int
	// MaxUploadBytes caps an uploaded zip; 0 means DefaultMaxUploadBytes.
	MaxUploadBytes int64
	// MaxConcurrentUploads bounds the uploads validated at once (each may hold
	// its zip and up to 256 MiB of files in memory); 0 means the default, 4.
	MaxConcurrentUploads int
	// RiverUI, when set, is mounted at /riverui/ for operators only.
	RiverUI http.Handler
	// Proxy, when set, serves every path below /fn/ (the public invoke path,
	// no token; see httpapi/proxy), ahead of the API router, and the
	// owner's invoke of the API and the console; without it those answer
	// EUNAVAILABLE.
	Proxy FunctionProxy
	// Metrics, when set, is served at GET /metrics for operators only (a
	// Prometheus scrape with an admin token: the series name tenants'
	// functions), e.g. promhttp.HandlerFor(registry, promhttp.HandlerOpts{}).
	Metrics http.Handler
	// FunctionMetrics, when set, is gathered for GET
	// /v1/namespaces/{ns}/metrics, which answers the namespace's own
	// sless_function_* series to its token: the registry of the proxy's
	// metrics (proxy.Config.Registerer), whose other series it leaves out.
	// Without it that route is EUNAVAILABLE.
	FunctionMetrics prometheus.Gatherer
	// Sandbox says in a few words how function processes are isolated, e.g.
	// "bubblewrap", "kubernetes" or "none"; /healthz and /readyz report it as
	// "sandbox" so operators see an unsandboxed server. "" reports "unknown".
	Sandbox string
	// ConsoleLivePoll is how often a live console page looks for new events;
	// 0 means console.DefaultLivePoll.
	ConsoleLivePoll time.Duration
	// CallbackAllow admits the callback URLs of asynchronous invocations
	// (SLESS_CALLBACK_ALLOW); empty refuses every callback.
	CallbackAllow domain.CallbackAllow
	// Secrets seals and shreds secret values (secrets.Vault); nil answers
	// the secret routes' writes with 503 (no secrets key configured).
	Secrets command.Sealer
	// HiddenFunctions are left out of the human listing (SPEC §7).
	HiddenFunctions []string
	// Logger receives internal errors; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of domain commands; nil means time.Now.
	Now func() time.Time
}

// FunctionProxy is the invoke path of functions (httpapi/proxy's *Proxy):
// ServeHTTP serves the public /fn/ path; Invoke calls a function for its
// authenticated owner and writes the function's answer, returning an error
// (having written nothing) when the function does not exist.
type FunctionProxy interface {
	http.Handler
	ServeInvoke(w http.ResponseWriter, r *http.Request, namespace, function string, kind store.TriggerKind) error
	// MaxBodyBytes is the largest body an invocation may have, also an
	// asynchronous one (413 before anything is stored).
	MaxBodyBytes() int64
	// Instances says what runs of a function now, as this server's
	// autoscaler sees it; nil when the function is not routed.
	Instances(namespace, function string) *wire.Instances
}

// instances is FunctionProxy.Instances, or nil without a proxy.
func (s *Server) instances(namespace, function string) *wire.Instances {
	if s.cfg.Proxy == nil {
		return nil
	}
	return s.cfg.Proxy.Instances(namespace, function)
}

// Server is the HTTP API of sless. Its Handler serves /v1, /healthz, /readyz
// and (when configured) /riverui/; Echo lets later parts add routes such as
// the /fn/ proxy before serving.
type Server struct {
	cfg     Config
	echo    *echo.Echo
	handler http.Handler
	limits  *limiter
	uploads chan struct{}
	hidden  map[string]bool
	cmd     *command.Commands
	console *console.Console
	log     *slog.Logger
}

// New returns a Server for cfg with every route registered. It returns
// EINVALID when a required field is missing or ExternalURL is not an
// absolute http(s) URL.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Store == nil:
		return nil, domain.Errorf(domain.EINVALID, "httpapi: Config.Store is required")
	case cfg.Code == nil:
		return nil, domain.Errorf(domain.EINVALID, "httpapi: Config.Code is required")
	case cfg.Verifier == nil:
		return nil, domain.Errorf(domain.EINVALID, "httpapi: Config.Verifier is required")
	case !strings.HasPrefix(cfg.ExternalURL, "http://") && !strings.HasPrefix(cfg.ExternalURL, "https://"):
		return nil, domain.Errorf(domain.EINVALID, "httpapi: Config.ExternalURL %q must be an absolute http(s) URL", cfg.ExternalURL)
	}
	cfg.ExternalURL = strings.TrimRight(cfg.ExternalURL, "/")
	if cfg.BaseImage == nil {
		cfg.BaseImage = DefaultBaseImage
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = DefaultRateLimit
	}
	if cfg.RateBurst <= 0 {
		cfg.RateBurst = DefaultRateBurst
	}
	if cfg.MaxUploadBytes <= 0 {
		cfg.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if cfg.MaxConcurrentUploads <= 0 {
		cfg.MaxConcurrentUploads = DefaultMaxConcurrentUploads
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sandbox == "" {
		cfg.Sandbox = "unknown"
	}
	s := &Server{
		cfg:     cfg,
		limits:  newLimiter(cfg.RateLimit, cfg.RateBurst, cfg.Now),
		uploads: make(chan struct{}, cfg.MaxConcurrentUploads),
		hidden:  map[string]bool{},
		log:     cfg.Logger,
		cmd: command.New(command.Config{Store: cfg.Store, Code: cfg.Code, BaseImage: cfg.BaseImage, Now: cfg.Now,
			CallbackAllow: cfg.CallbackAllow, Secrets: cfg.Secrets}),
	}
	for _, name := range cfg.HiddenFunctions {
		s.hidden[name] = true
	}
	var err error
	if s.console, err = s.newConsole(); err != nil {
		return nil, err
	}
	s.echo = s.newEcho()
	s.handler = http.HandlerFunc(s.route)
	return s, nil
}

// DefaultBaseImage is the base image of a runtime when Config.BaseImage is nil.
func DefaultBaseImage(runtime string) string { return "sless/runtime-" + runtime + ":latest" }

// Handler returns the http.Handler serving every route: /fn/ and /async-fn/ through
// Config.Proxy (when set), /console/ through the console, everything else
// through the API router.
func (s *Server) Handler() http.Handler { return s.handler }

// route sends the invoke path to the proxy before Echo sees it: the hot path
// needs none of the API's middleware (tokens, rate limits, request ids). The
// console has its own sessions, headers and error pages.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case (strings.HasPrefix(p, "/fn/") || strings.HasPrefix(p, invoke.AsyncPrefix)) && s.cfg.Proxy != nil:
		s.cfg.Proxy.ServeHTTP(w, r)
	case strings.HasPrefix(p, "/console/"):
		s.serveConsole(w, r)
	case p == "/console":
		http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
	default:
		s.echo.ServeHTTP(w, r)
	}
}

// Commands returns the command layer the server runs on (for the proxy's
// asynchronous enqueue).
func (s *Server) Commands() *command.Commands { return s.cmd }

// Echo returns the underlying Echo instance, so other parts of sless can add
// routes (the /fn/ proxy, the console). Routes added under /v1 must also be
// described in the OpenAPI document (openapi.go); a test checks it.
func (s *Server) Echo() *echo.Echo { return s.echo }

// HTTPServer returns an http.Server for addr serving Handler with timeouts
// that keep slow clients from holding connections (Slowloris) while leaving
// room for a 32 MiB upload on a slow link. Its Shutdown also ends the
// console's live streams.
func (s *Server) HTTPServer(addr string) *http.Server {
	srv := &http.Server{
		Addr:              addr,
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       5 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	// Open console pages hold a stream each; a graceful stop ends them
	// rather than waiting for the browsers to leave.
	srv.RegisterOnShutdown(s.console.Shutdown)
	return srv
}

// newEcho builds the router: global middleware, the namespace group behind
// authentication, rate limit and the namespace check, and operator routes.
func (s *Server) newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(s.requestID)
	e.Use(s.trace)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/v1/openapi.json", s.openAPI)
	e.GET("/v1/namespaces", s.listNamespaces, s.authenticate, s.rateLimit, requireAdmin)
	if s.cfg.Metrics != nil {
		e.GET("/metrics", echo.WrapHandler(s.cfg.Metrics), s.authenticate, s.rateLimit, requireAdmin)
	}
	if s.cfg.RiverUI != nil {
		h := echo.WrapHandler(s.cfg.RiverUI)
		e.GET("/riverui", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/riverui/") })
		e.Any("/riverui/*", h, s.authenticateOperator, s.rateLimit, requireAdmin)
	}
	// The plain-text listing of SPEC §7 for curl (serveConsole passes
	// GET /console/{ns} here when the Accept header lacks text/html).
	e.GET("/funcs/:ns", s.textListing, s.authenticate, s.rateLimit, authorizeNamespace)
	e.GET("/console/:ns", s.textListing, s.authenticate, s.rateLimit, authorizeNamespace)

	g := e.Group("/v1/namespaces/:ns", s.authenticate, s.rateLimit, authorizeNamespace)
	g.RouteNotFound("/*", s.noRoute)
	s.registerNamespaceRoutes(g)
	s.registerFunctionRoutes(g)
	s.registerUploadRoutes(g)
	s.registerVersionRoutes(g)
	s.registerTriggerRoutes(g)
	s.registerJobRoutes(g)
	s.registerInvokeRoutes(g)
	s.registerInvocationRoutes(g)
	s.registerAsyncRoutes(g)
	s.registerEventRoutes(g)
	s.registerMetricsRoutes(g)
	s.registerSecretRoutes(g)
	return e
}

// noRoute answers a request below a namespace that matches no route: 405
// with Allow when the path exists with other methods, 404 otherwise. Group
// middleware makes Echo register a catch-all route (so unknown paths need a
// token too), and that route would otherwise turn every 405 into a 404.
func (s *Server) noRoute(c echo.Context) error {
	path := echo.GetPath(c.Request())
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := s.echo.NewContext(c.Request(), nil)
		s.echo.Router().Find(m, path, probe)
		if probe.Path() != c.Path() {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		return echo.ErrNotFound
	}
	c.Response().Header().Set(echo.HeaderAllow, strings.Join(allow, ", "))
	return echo.ErrMethodNotAllowed
}

// metadata is what every event appended for this request records.
func metadata(c echo.Context) store.Metadata {
	return store.Metadata{Actor: principalOf(c).Subject, RequestID: requestIDOf(c)}
}
