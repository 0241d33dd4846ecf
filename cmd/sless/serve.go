package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"riverqueue.com/riverui"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/s3embed"
	"github.com/slessio/sless/tracing"
	"github.com/slessio/sless/workers"
)

// runDev implements `sless dev`: everything in one process on embedded
// defaults (private PostgreSQL, embedded S3, local driver, dev signing key).
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := bindConfig(fs)
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	return runPlatform(ctx, c, true, stdout, stderr)
}

// runServe implements `sless serve`: the control plane against an external
// PostgreSQL and S3, with tokens checked against the configured keys.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := bindConfig(fs)
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	switch {
	case c.DatabaseURL == "":
		return errors.New("serve needs DATABASE_URL (or --database-url); `sless dev` runs on embedded defaults")
	case c.S3Endpoint == "":
		return errors.New("serve needs S3_ENDPOINT (or --s3-endpoint); `sless dev` runs an embedded S3 server")
	case c.JWTSecret == "" && c.JWKSURL == "" && c.JWKSFile == "":
		return errors.New("serve needs SLESS_JWT_SECRET, SLESS_JWKS_URL or SLESS_JWKS_FILE to verify tokens")
	}
	if err := refuseDevCredentials(c); err != nil {
		return err
	}
	return runPlatform(ctx, c, false, stdout, stderr)
}

// platform holds what runPlatform started, to stop it in reverse order.
type platform struct {
	proxy   *proxy.Proxy
	writer  *store.InvocationWriter
	db      *database
	s3      *s3embed.Server
	driver  *runningDriver
	workers *workers.Workers
	// http serves the port: the proxy's own server takes /fn requests in
	// their common form and hands every other connection to the API's
	// net/http server (proxy.Server).
	http *proxy.Server
	// flushSpans is tracing.Setup's shutdown.
	flushSpans func(context.Context) error
}

// runPlatform starts the database, object storage, workers, driver and API,
// serves until ctx ends, then stops everything, child processes included.
func runPlatform(ctx context.Context, c *config, dev bool, stdout, stderr io.Writer) (err error) {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := c.checkScaling(); err != nil {
		return err
	}
	if c.DataDir, err = filepath.Abs(c.DataDir); err != nil {
		return err
	}
	// 0700: the data dir holds the signing key, the database password and
	// every tenant's code. (As root, the private cluster then keeps its files
	// where the postgres user can reach them: see openDatabase.)
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return err
	}
	p := &platform{}
	defer func() { p.stop(ctx, c.ShutdownWait, log) }()
	// Spans are exported when the OTEL_* variables name an endpoint (see
	// package tracing); stop flushes them last.
	if p.flushSpans, err = tracing.Setup(ctx, "sless"); err != nil {
		return err
	}
	if tracing.Enabled() {
		log.Info("tracing: spans are exported over OTLP/HTTP")
	}

	if p.db, err = openDatabase(ctx, c, true, stderr); err != nil {
		return err
	}
	code, err := p.openCode(ctx, c, log)
	if err != nil {
		return err
	}
	vault, err := openVault(c, dev, p.db, log)
	if err != nil {
		return err
	}
	verifier, err := newVerifier(c, dev, log)
	if err != nil {
		return err
	}
	// The driver's reports wait for the workers, which start after it.
	workersReady := make(chan struct{})
	started := func() *workers.Workers {
		select {
		case <-workersReady:
			return p.workers
		case <-ctx.Done():
			return nil
		}
	}
	p.driver, err = openDriver(ctx, c, dev, log, driver.Reports{
		Crashed: func(ns, fn string) {
			if w := started(); w != nil {
				if err := w.Rollout(context.WithoutCancel(ctx), ns, fn); err != nil {
					log.Error("roll out after a crash loop", "namespace", ns, "function", fn, "error", err)
				}
			}
		},
		CronRan: func(r driver.CronRun) {
			if w := started(); w != nil {
				w.RecordCronRun(r)
			}
		},
	})
	if err != nil {
		return err
	}
	var sealer command.Sealer // nil: secret writes answer 503
	if vault != nil {
		sealer = vault
		p.driver.UseSecrets(driver.SecretOpenerFunc(vault.Open))
	}
	// The invocation log's writer: the proxy records requests, the workers job
	// and cron runs (through the proxy, which counts them in its metrics); it
	// batches them off the hot path.
	logStore := store.New(p.db.Pool, nil)
	// Its spool keeps records on disk while the database is away.
	logOpts := store.InvocationWriterOptions{Logger: log.With("component", "invocations")}
	if c.SpoolMB > 0 {
		logOpts.SpoolDir, logOpts.SpoolBytes = c.path("invocation-spool"), int64(c.SpoolMB)<<20
	}
	p.writer = logStore.NewInvocationWriter(logOpts)
	trusted, err := c.trustedProxies()
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), sandboxInfo(p.driver.sandbox))
	// The proxy's series have a registry of their own, which /metrics serves
	// with reg: a namespace's GET .../metrics gathers only them (not the
	// database's queue depths or the runtime's) and keeps its own.
	proxyReg := prometheus.NewRegistry()
	idle := c.IdleTimeout
	if idle == 0 {
		idle = -1 // the flag's 0 means never; the proxy's 0 means its default
	}
	callbackAllow, err := domain.ParseCallbackAllow(c.CallbackAllow)
	if err != nil {
		return fmt.Errorf("--callback-allow: %s", domain.ErrorMessage(err))
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Listen, err)
	}
	serving := false
	defer func() {
		if !serving { // the HTTP server closes it once it serves
			ln.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	// The proxy only reads routes and listens for their changes: the store
	// without an outbox client serves it. It queues asynchronous
	// invocations through the API's commands (UseEnqueuer below).
	p.proxy, err = proxy.New(proxy.Config{Store: logStore, Invocations: p.writer, Scaler: proxy.DriverScaler{Driver: p.driver, Store: logStore},
		IdleTimeout: idle, IdleTimeouts: c.IdleOverrides, MaxBodyBytes: c.MaxBodyBytes, TrustedProxies: trusted,
		DefaultMaxConcurrency: c.FnConcurrency, ClientRate: c.FnClientRate, ClientBurst: c.FnClientBurst,
		DefaultMaxInstances: c.FnMaxInstances, NamespaceMaxInstances: c.NSMaxInstances, StableWindow: c.StableWindow, PanicWindow: c.PanicWindow,
		PlatformToken: platformToken(verifier), Registerer: proxyReg, Logger: log.With("component", "proxy")})
	if err != nil {
		return err
	}
	if p.workers, err = workers.New(p.db.Pool, workers.Config{Driver: p.driver, Code: code, Invocations: p.proxy,
		Invoker: p.proxy, AsyncWorkers: c.AsyncWorkers, CallbackAllow: callbackAllow, PlatformPorts: []int{port},
		InvocationRetention: c.Retention, ShutdownTimeout: c.ShutdownWait, BuildsPerNamespace: c.BuildsPerNS, Registerer: reg,
		Logger: log.With("component", "workers")}); err != nil {
		return err
	}
	close(workersReady)
	st := p.workers.Store()
	reg.MustRegister(httpapi.QueueDepthCollector(st))
	ui, err := riverui.NewHandler(&riverui.HandlerOpts{Endpoints: riverui.NewEndpoints(p.workers.Client(), nil), Logger: log.With("component", "riverui"), Prefix: "/riverui"})
	if err != nil {
		return fmt.Errorf("river ui: %w", err)
	}
	if err := ui.Start(ctx); err != nil {
		return fmt.Errorf("river ui: %w", err)
	}

	if c.ExternalURL == "" {
		c.ExternalURL = fmt.Sprintf("http://localhost:%d", port)
	}
	api, err := httpapi.New(httpapi.Config{
		Store: st, Code: code, Verifier: verifier, ExternalURL: c.ExternalURL,
		RateLimit: c.RateLimit, RateBurst: c.RateBurst, RiverUI: ui, Logger: log.With("component", "api"),
		Proxy: p.proxy, Metrics: promhttp.HandlerFor(prometheus.Gatherers{reg, proxyReg}, promhttp.HandlerOpts{}), FunctionMetrics: proxyReg,
		Sandbox: p.driver.sandbox, CallbackAllow: callbackAllow, Secrets: sealer,
	})
	if err != nil {
		return err
	}
	p.proxy.UseEnqueuer(api.Commands())
	if err := p.workers.Start(ctx); err != nil {
		return err
	}
	if err := p.proxy.Start(ctx); err != nil {
		return err
	}
	if err := p.resume(ctx, log); err != nil {
		return err
	}
	p.http = p.proxy.NewServer(api.HTTPServer(c.Listen))
	served := make(chan error, 1)
	serving = true
	go func() { served <- p.http.Serve(ln) }()
	log.Info("sless is serving", "api", c.ExternalURL+"/v1", "data_dir", c.DataDir)
	if dev {
		if err := printWelcome(stdout, c); err != nil {
			return err
		}
	}
	select {
	case <-ctx.Done():
		log.Info("stopping")
		return nil
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	case <-p.db.lost():
		return fmt.Errorf("embedded postgres: %w", p.db.cluster.Err())
	}
}

// sandboxInfo is the gauge sless_sandbox_info{mode}: 1, naming how function
// processes are isolated (bubblewrap, none, kubernetes).
func sandboxInfo(mode string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "sless_sandbox_info", Help: "How function processes are isolated: bubblewrap, none (insecure) or kubernetes.",
		ConstLabels: prometheus.Labels{"mode": mode}})
	g.Set(1)
	return g
}

// platformToken reports whether an Authorization header carries a token
// of this API, which the proxy then keeps from the function.
func platformToken(v *auth.Verifier) func(string) bool {
	return func(header string) bool {
		raw, ok := strings.CutPrefix(header, "Bearer ")
		if !ok {
			return false
		}
		_, err := v.Verify(context.Background(), strings.TrimSpace(raw))
		return err == nil
	}
}

// openCode connects to S3_ENDPOINT or starts the embedded S3 server on files
// under the data dir, so minio-go is the one code path everywhere.
func (p *platform) openCode(ctx context.Context, c *config, log *slog.Logger) (*codestore.Store, error) {
	endpoint := c.S3Endpoint
	switch {
	case endpoint != "" && (c.S3AccessKey == "" || c.S3SecretKey == ""):
		return nil, errors.New("S3_ENDPOINT needs S3_ACCESS_KEY and S3_SECRET_KEY (or --s3-access-key and --s3-secret-key)")
	case endpoint == "" && (c.S3AccessKey == "") != (c.S3SecretKey == ""):
		return nil, errors.New("set both S3_ACCESS_KEY and S3_SECRET_KEY, or neither (the embedded S3 server then makes its own)")
	case endpoint == "" && c.S3AccessKey == "":
		// Keys of this data dir's own, which only the platform can read.
		var err error
		if c.S3AccessKey, c.S3SecretKey, err = s3embed.LoadOrCreateCredentials(c.DataDir); err != nil {
			return nil, fmt.Errorf("embedded S3 keys: %w", err)
		}
	}
	if endpoint == "" {
		srv, err := s3embed.Start(ctx, s3embed.Options{Dir: c.path("s3"), AccessKey: c.S3AccessKey, SecretKey: c.S3SecretKey,
			Buckets: []string{c.S3Bucket}, Logger: log.With("component", "s3embed")})
		if err != nil {
			return nil, fmt.Errorf("start embedded S3: %w", err)
		}
		p.s3 = srv
		endpoint = srv.URL()
		log.Info("S3_ENDPOINT is not set: serving an embedded S3 server", "endpoint", endpoint, "dir", c.path("s3"))
	}
	return codestore.New(ctx, codestore.Config{Endpoint: endpoint, AccessKey: c.S3AccessKey, SecretKey: c.S3SecretKey,
		Bucket: c.S3Bucket, Region: c.S3Region, UseSSL: c.S3UseSSL})
}

// newVerifier checks HS256 tokens with the configured secret (dev: the key in
// the data dir) and RS256/ES256 tokens against a JWKS when one is configured.
func newVerifier(c *config, dev bool, log *slog.Logger) (*auth.Verifier, error) {
	cfg := auth.Config{JWKSURL: c.JWKSURL, JWKSFile: c.JWKSFile, Issuer: c.JWTIssuer, Audience: c.JWTAudience,
		AdminClaim: c.AdminClaim, Logger: log.With("component", "auth")}
	if c.JWTSecret != "" || dev {
		key, err := signingKey(c)
		if err != nil {
			return nil, err
		}
		cfg.HS256Secret = key
	}
	return auth.NewVerifier(cfg)
}

// resume asks for every function to be converged again: after a restart the
// local driver runs nothing, and the read model says what should run.
func (p *platform) resume(ctx context.Context, log *slog.Logger) error {
	fns, err := p.workers.Store().ListAllFunctions(ctx)
	if err != nil {
		return err
	}
	for _, f := range fns {
		if f.ActiveVersion == 0 {
			continue
		}
		if err := p.workers.Rollout(ctx, f.Namespace, f.Name); err != nil {
			return err
		}
	}
	if len(fns) > 0 {
		log.Info("resuming functions", "count", len(fns))
	}
	return nil
}

// stop shuts everything down in reverse order: the HTTP server and the
// workers drain, side by side, what is running for up to the shutdown
// timeout (the workers record the runs they interrupt through the proxy's
// invocation log, so the proxy closes after them), then the rest gets a
// bounded time of its own.
func (p *platform) stop(ctx context.Context, wait time.Duration, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait+30*time.Second)
	defer cancel()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		if p.http == nil {
			return
		}
		hctx, cancel := context.WithTimeout(sctx, wait)
		defer cancel()
		if err := p.http.Shutdown(hctx); err != nil {
			log.Warn("http shutdown", "error", err)
		}
	}()
	if p.workers != nil {
		if err := p.workers.Stop(sctx); err != nil {
			log.Warn("workers stop", "error", err)
		}
	}
	<-drained
	if p.proxy != nil {
		if err := p.proxy.Close(sctx); err != nil {
			log.Warn("proxy stop", "error", err)
		}
	}
	if p.writer != nil {
		if err := p.writer.Close(sctx); err != nil {
			log.Warn("invocation log flush", "error", err)
		}
	}
	if p.driver != nil {
		if err := p.driver.close(sctx); err != nil {
			log.Warn("driver stop", "error", err)
		}
	}
	if p.s3 != nil {
		_ = p.s3.Close()
	}
	if p.db != nil {
		p.db.Close(sctx)
	}
	if p.flushSpans != nil {
		if err := p.flushSpans(sctx); err != nil {
			log.Warn("tracing flush", "error", err)
		}
	}
}

// printWelcome prints the API URL, a token for a demo user and a first curl.
func printWelcome(w io.Writer, c *config) error {
	secret, err := signingKey(c)
	if err != nil {
		return err
	}
	const demo = "demo"
	tok, err := auth.Mint(secret, demo, 30*24*time.Hour, nil)
	if err != nil {
		return err
	}
	api := strings.TrimSuffix(c.ExternalURL, "/") + "/v1/namespaces/" + auth.Namespace(demo)
	_, err = fmt.Fprintf(w, `
sless is running.
  console:    %s/console/
              sign in as %q: %s/console/?token=%s
  API:        %s/v1   (OpenAPI: %s/v1/openapi.json)
  namespace:  %s   (user %q)
  token:      %s

Log the CLI in as %q:
  sless login --url %s --token %s

Or try it with curl:
  export TOKEN=%s API=%s
  curl -s -X POST -H "Authorization: Bearer $TOKEN" -d '{"name":"hello","runtime":"python3.11"}' $API/functions
  curl -s -H "Authorization: Bearer $TOKEN" -H 'Accept: text/plain' $API/functions

Press Ctrl-C to stop (functions are started again on the next run).
`, c.ExternalURL, demo, c.ExternalURL, tok, c.ExternalURL, c.ExternalURL, auth.Namespace(demo), demo, tok, demo, c.ExternalURL, tok, tok, api)
	return err
}

// devCredentials are the keys that development setups of sless shipped
// (the compose file's MinIO and PostgreSQL, an example JWT secret): known to
// anyone, so `serve` refuses them unless told it is a development setup.
var devCredentials = map[string]string{
	"sless-dev-secret": "the S3 secret key",
	"change-me":        "the JWT secret",
}

// refuseDevCredentials fails when c uses a key of devCredentials or the
// PostgreSQL password "sless", unless --allow-dev-credentials.
func refuseDevCredentials(c *config) error {
	if c.DevCredentials {
		return nil
	}
	var found []string
	for _, v := range []string{c.S3SecretKey, c.JWTSecret} {
		if what, ok := devCredentials[v]; ok {
			found = append(found, what+" "+strconv.Quote(v))
		}
	}
	if u, err := url.Parse(c.DatabaseURL); err == nil && u.User != nil {
		if pw, _ := u.User.Password(); pw == "sless" {
			found = append(found, `the PostgreSQL password "sless"`)
		}
	}
	if len(found) == 0 {
		return nil
	}
	return fmt.Errorf("refusing to serve with the known development credentials: %s; set keys of your own "+
		"(or pass --allow-dev-credentials, SLESS_ALLOW_DEV_CREDENTIALS=true, on a development machine)", strings.Join(found, ", "))
}
