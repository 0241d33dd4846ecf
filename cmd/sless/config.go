package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/runtimes"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/workers"
)

// config is the control plane's configuration: flags override environment
// variables, which override the embedded defaults of `sless dev`.
type config struct {
	DataDir     string // SLESS_DATA_DIR: dev state (database cluster, S3 files, builds, dev key)
	DatabaseURL string // DATABASE_URL: empty starts a private cluster under DataDir
	Listen      string // SLESS_LISTEN: API and proxy address
	ExternalURL string // SLESS_EXTERNAL_URL: base of trigger URLs

	S3Endpoint  string // S3_ENDPOINT: empty starts an embedded S3 server under DataDir
	S3AccessKey string // S3_ACCESS_KEY; the embedded server's own random key when empty
	S3SecretKey string // S3_SECRET_KEY; likewise
	S3Bucket    string // S3_BUCKET
	S3Region    string // S3_REGION
	S3UseSSL    bool   // S3_USE_SSL

	JWTSecret    string        // SLESS_JWT_SECRET: HS256 secret; dev default is a key in DataDir
	JWKSURL      string        // SLESS_JWKS_URL
	JWKSFile     string        // SLESS_JWKS_FILE
	JWTIssuer    string        // SLESS_JWT_ISSUER
	JWTAudience  string        // SLESS_JWT_AUDIENCE
	AdminClaim   string        // SLESS_ADMIN_CLAIM
	RateLimit    float64       // SLESS_RATE_LIMIT: requests per second per namespace
	RateBurst    int           // SLESS_RATE_BURST
	ShutdownWait time.Duration // SLESS_SHUTDOWN_TIMEOUT
	BuildsPerNS  int           // SLESS_BUILDS_PER_NAMESPACE: builds of one namespace at once, across replicas

	IdleTimeout    time.Duration            // SLESS_IDLE_TIMEOUT: scale an idle http function to zero after this; 0 never
	IdleOverrides  map[string]time.Duration // --idle-timeout-for ns/name=duration
	TrustedProxy   string                   // SLESS_TRUSTED_PROXIES: CIDRs whose X-Forwarded-* headers are kept
	Retention      time.Duration            // SLESS_INVOCATION_RETENTION
	SpoolMB        int                      // SLESS_INVOCATION_SPOOL_MB: disk the invocation log may use while the database is away; 0 none
	MaxBodyBytes   int64                    // SLESS_MAX_BODY_BYTES: request body limit of the function proxy
	FnConcurrency  int                      // SLESS_FN_DEFAULT_MAX_CONCURRENCY: in-flight requests per function without max_concurrency; 0 unlimited
	FnClientRate   float64                  // SLESS_FN_CLIENT_RATE: /fn requests per second per client address; 0 no limit
	FnClientBurst  int                      // SLESS_FN_CLIENT_BURST
	CallbackAllow  string                   // SLESS_CALLBACK_ALLOW: origins async callbacks may be POSTed to; empty = callbacks off
	AsyncWorkers   int                      // SLESS_ASYNC_WORKERS: asynchronous deliveries this process runs at once
	FnMaxInstances int                      // SLESS_FN_DEFAULT_MAX_INSTANCES: max_instances of a function that sets none
	NSMaxInstances int                      // SLESS_NAMESPACE_MAX_INSTANCES: instances of one namespace's functions; 0 no cap
	StableWindow   time.Duration            // SLESS_SCALE_STABLE_WINDOW: the autoscaler's stable window
	PanicWindow    time.Duration            // SLESS_SCALE_PANIC_WINDOW: the autoscaler's panic window
	WarmPool       int                      // SLESS_WARM_POOL: started python3.11 and nodejs20 processes kept for cold starts, per runtime; 0 off

	NoSandbox       bool          // SLESS_INSECURE_NO_SANDBOX: run local functions as plain processes of this user
	EgressAllow     string        // SLESS_EGRESS_ALLOW: what sandboxed functions may reach besides the internet
	DevCredentials  bool          // SLESS_ALLOW_DEV_CREDENTIALS: serve accepts the development setup's known keys
	SandboxMaxProcs int           // SLESS_SANDBOX_MAX_PROCS: processes and threads of a tenant (as root) or a sandbox
	SandboxTmpBytes int64         // SLESS_SANDBOX_TMP_BYTES: size of a sandbox's /tmp
	BuildTimeout    time.Duration // SLESS_BUILD_TIMEOUT: time limit of one local build step
	DepsMaxBytes    int64         // SLESS_DEPS_MAX_BYTES: size limit of the dependencies one installs

	Driver         string // SLESS_DRIVER: local or kubernetes
	Kubeconfig     string // KUBECONFIG: empty uses the in-cluster service account
	Registry       string // SLESS_REGISTRY: where function images are pushed (kubernetes)
	BuildNamespace string // SLESS_BUILD_NAMESPACE (kubernetes)
	SystemNS       string // SLESS_SYSTEM_NAMESPACE: the control plane's namespace (kubernetes)
	KanikoImage    string // SLESS_KANIKO_IMAGE (kubernetes)
	BuildCache     bool   // SLESS_BUILD_CACHE: kaniko --cache (kubernetes)
	BuildCacheRepo string // SLESS_BUILD_CACHE_REPO (kubernetes)
	BuildS3URL     string // SLESS_BUILD_S3_URL: S3 URL as kaniko pods see it; default from S3_ENDPOINT
	// RegistryMirrors: SLESS_REGISTRY_MIRRORS, "registry=mirror,...": kaniko pulls base images from the mirror (kubernetes)
	RegistryMirrors string
	// InsecureRegistries: SLESS_INSECURE_REGISTRIES: registries kaniko uses over plain HTTP (kubernetes)
	InsecureRegistries string
	// FunctionEndpoint: SLESS_FUNCTION_ENDPOINT: how the proxy reaches a function's pods, service or endpointslices (kubernetes)
	FunctionEndpoint string
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// bindConfig registers the flags shared by the commands that talk to the
// database, with their environment defaults.
func bindConfig(fs *flag.FlagSet) *config {
	c := &config{}
	fs.StringVar(&c.DataDir, "data-dir", env("SLESS_DATA_DIR", ".sless"), "directory for local state (env SLESS_DATA_DIR)")
	fs.StringVar(&c.DatabaseURL, "database-url", env("DATABASE_URL", ""), "PostgreSQL URL; empty starts a private cluster in the data dir (env DATABASE_URL)")
	fs.StringVar(&c.Listen, "listen", env("SLESS_LISTEN", ":8080"), "address of the API and the function proxy (env SLESS_LISTEN)")
	fs.StringVar(&c.ExternalURL, "external-url", env("SLESS_EXTERNAL_URL", ""), "public base URL used in trigger URLs (env SLESS_EXTERNAL_URL); default http://localhost:<port>")
	fs.StringVar(&c.S3Endpoint, "s3-endpoint", env("S3_ENDPOINT", ""), "S3 endpoint host:port; empty starts an embedded S3 server (env S3_ENDPOINT)")
	fs.StringVar(&c.S3AccessKey, "s3-access-key", env("S3_ACCESS_KEY", ""), "S3 access key (env S3_ACCESS_KEY); the embedded server makes a random one per data dir")
	fs.StringVar(&c.S3SecretKey, "s3-secret-key", env("S3_SECRET_KEY", ""), "S3 secret key (env S3_SECRET_KEY); the embedded server makes a random one per data dir")
	fs.StringVar(&c.S3Bucket, "s3-bucket", env("S3_BUCKET", "sless-code"), "S3 bucket for code (env S3_BUCKET)")
	fs.StringVar(&c.S3Region, "s3-region", env("S3_REGION", "us-east-1"), "S3 region (env S3_REGION)")
	fs.BoolVar(&c.S3UseSSL, "s3-use-ssl", env("S3_USE_SSL", "") == "true", "use HTTPS for S3 (env S3_USE_SSL=true)")
	fs.StringVar(&c.JWTSecret, "jwt-secret", env("SLESS_JWT_SECRET", ""), "HS256 secret; empty uses the dev key in the data dir (env SLESS_JWT_SECRET)")
	fs.StringVar(&c.JWKSURL, "jwks-url", env("SLESS_JWKS_URL", ""), "JWKS URL for RS256/ES256 tokens (env SLESS_JWKS_URL)")
	fs.StringVar(&c.JWKSFile, "jwks-file", env("SLESS_JWKS_FILE", ""), "JWKS file for RS256/ES256 tokens (env SLESS_JWKS_FILE)")
	fs.StringVar(&c.JWTIssuer, "jwt-issuer", env("SLESS_JWT_ISSUER", ""), "required iss claim, if set (env SLESS_JWT_ISSUER)")
	fs.StringVar(&c.JWTAudience, "jwt-audience", env("SLESS_JWT_AUDIENCE", ""), "required aud claim, if set (env SLESS_JWT_AUDIENCE)")
	fs.StringVar(&c.AdminClaim, "admin-claim", env("SLESS_ADMIN_CLAIM", "sless_admin"), "boolean claim that marks operators (env SLESS_ADMIN_CLAIM)")
	fs.Float64Var(&c.RateLimit, "rate-limit", envFloat("SLESS_RATE_LIMIT", 50), "API requests per second per namespace (env SLESS_RATE_LIMIT)")
	fs.IntVar(&c.RateBurst, "rate-burst", envInt("SLESS_RATE_BURST", 200), "API burst per namespace (env SLESS_RATE_BURST)")
	fs.DurationVar(&c.ShutdownWait, "shutdown-timeout", envDuration("SLESS_SHUTDOWN_TIMEOUT", 15*time.Second), "how long a graceful stop may take (env SLESS_SHUTDOWN_TIMEOUT)")
	fs.IntVar(&c.BuildsPerNS, "builds-per-namespace", envInt("SLESS_BUILDS_PER_NAMESPACE", workers.DefaultBuildsPerNamespace), "builds of one namespace that may run at once, across every replica; its further builds wait without holding a build worker (env SLESS_BUILDS_PER_NAMESPACE)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", envDuration("SLESS_IDLE_TIMEOUT", 10*time.Minute), "stop an http function after this long without requests, 0 = never (env SLESS_IDLE_TIMEOUT)")
	c.IdleOverrides = map[string]time.Duration{}
	fs.Func("idle-timeout-for", "per-function idle timeout, ns/name=duration (0 = never); repeatable", func(v string) error {
		key, d, ok := strings.Cut(v, "=")
		dur, err := time.ParseDuration(d)
		if !ok || err != nil || !strings.Contains(key, "/") {
			return fmt.Errorf("want <namespace>/<function>=<duration>, got %q", v)
		}
		c.IdleOverrides[key] = dur
		return nil
	})
	fs.StringVar(&c.TrustedProxy, "trusted-proxies", env("SLESS_TRUSTED_PROXIES", ""), "comma-separated CIDRs of load balancers whose X-Forwarded-* headers the proxy keeps (env SLESS_TRUSTED_PROXIES)")
	fs.DurationVar(&c.Retention, "invocation-retention", envDuration("SLESS_INVOCATION_RETENTION", 7*24*time.Hour), "how long the invocation log keeps records (env SLESS_INVOCATION_RETENTION)")
	fs.IntVar(&c.SpoolMB, "invocation-spool-mb", envInt("SLESS_INVOCATION_SPOOL_MB", store.DefaultInvocationSpoolBytes>>20), "MiB of disk under the data dir where invocation records wait while the database cannot take them; past it they are lost (counted in sless_invocation_log_dropped_total); 0 keeps none (env SLESS_INVOCATION_SPOOL_MB)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", int64(envInt("SLESS_MAX_BODY_BYTES", 6<<20)), "request body limit of /fn/ (env SLESS_MAX_BODY_BYTES)")
	fs.IntVar(&c.FnConcurrency, "fn-default-max-concurrency", envInt("SLESS_FN_DEFAULT_MAX_CONCURRENCY", 0), "requests one function may have in flight on /fn when it sets no max_concurrency, beyond it 429; 0 = unlimited (env SLESS_FN_DEFAULT_MAX_CONCURRENCY)")
	fs.Float64Var(&c.FnClientRate, "fn-client-rate", envFloat("SLESS_FN_CLIENT_RATE", 0), "requests per second one client address may send to /fn, beyond it 429; 0 = no limit (env SLESS_FN_CLIENT_RATE)")
	fs.StringVar(&c.CallbackAllow, "callback-allow", env("SLESS_CALLBACK_ALLOW", ""), "origins the final response of an asynchronous invocation may be POSTed to (X-Sless-Callback-Url), comma-separated, e.g. https://hooks.example.com,https://*.example.org:8443; empty = callbacks off (env SLESS_CALLBACK_ALLOW)")
	fs.IntVar(&c.AsyncWorkers, "async-workers", envInt("SLESS_ASYNC_WORKERS", workers.DefaultAsyncWorkers), "asynchronous invocations this process delivers at once (env SLESS_ASYNC_WORKERS)")
	fs.IntVar(&c.FnMaxInstances, "fn-default-max-instances", envInt("SLESS_FN_DEFAULT_MAX_INSTANCES", proxy.DefaultMaxInstances), "instances a function may scale to when it sets no max_instances (env SLESS_FN_DEFAULT_MAX_INSTANCES)")
	fs.IntVar(&c.NSMaxInstances, "namespace-max-instances", envInt("SLESS_NAMESPACE_MAX_INSTANCES", 0), "instances the functions of one namespace may run at once on this server; a function that would start beyond it gets 429, and scaling out stops at it; 0 = no cap (env SLESS_NAMESPACE_MAX_INSTANCES)")
	fs.DurationVar(&c.StableWindow, "scale-stable-window", envDuration("SLESS_SCALE_STABLE_WINDOW", proxy.DefaultStableWindow), "the autoscaler sizes a function on its mean requests in flight over this window (env SLESS_SCALE_STABLE_WINDOW)")
	fs.DurationVar(&c.PanicWindow, "scale-panic-window", envDuration("SLESS_SCALE_PANIC_WINDOW", proxy.DefaultPanicWindow), "and over this shorter one when load jumps past twice its instances' capacity (env SLESS_SCALE_PANIC_WINDOW)")
	fs.IntVar(&c.WarmPool, "warm-pool", envInt("SLESS_WARM_POOL", 2), "local driver: python3.11 and nodejs20 processes started ahead, per runtime, that a cold start takes instead of starting an interpreter; 0 = off (env SLESS_WARM_POOL)")
	fs.IntVar(&c.FnClientBurst, "fn-client-burst", envInt("SLESS_FN_CLIENT_BURST", 0), "burst of --fn-client-rate; 0 = the rate rounded up (env SLESS_FN_CLIENT_BURST)")
	fs.BoolVar(&c.NoSandbox, "insecure-no-sandbox", env("SLESS_INSECURE_NO_SANDBOX", "") == "true", "local driver: run functions as plain processes of this user, with no sandbox; never with untrusted code (env SLESS_INSECURE_NO_SANDBOX=true)")
	fs.StringVar(&c.EgressAllow, "egress-allow", env("SLESS_EGRESS_ALLOW", ""), "what functions may reach besides the internet (never private, link-local or loopback addresses otherwise): comma-separated CIDRs, addresses and address:port, e.g. 127.0.0.1:5432 for a database on this host (env SLESS_EGRESS_ALLOW)")
	fs.BoolVar(&c.DevCredentials, "allow-dev-credentials", env("SLESS_ALLOW_DEV_CREDENTIALS", "") == "true", "serve: accept the keys earlier development setups shipped (S3 secret sless-dev-secret, PostgreSQL password sless, JWT secret change-me); never in production (env SLESS_ALLOW_DEV_CREDENTIALS=true)")
	fs.IntVar(&c.SandboxMaxProcs, "sandbox-max-procs", envInt("SLESS_SANDBOX_MAX_PROCS", 4096), "local driver: processes and threads one tenant may run (as root; otherwise one function process), against fork bombs (env SLESS_SANDBOX_MAX_PROCS)")
	fs.Int64Var(&c.SandboxTmpBytes, "sandbox-tmp-bytes", int64(envInt("SLESS_SANDBOX_TMP_BYTES", 128<<20)), "local driver: size of the private /tmp of a function process (env SLESS_SANDBOX_TMP_BYTES)")
	fs.DurationVar(&c.BuildTimeout, "build-timeout", envDuration("SLESS_BUILD_TIMEOUT", runtimes.DefaultStepTimeout), "local driver: time limit of one build step, a compile or a dependency install (env SLESS_BUILD_TIMEOUT)")
	fs.Int64Var(&c.DepsMaxBytes, "deps-max-bytes", int64(envInt("SLESS_DEPS_MAX_BYTES", runtimes.DefaultMaxDepsBytes)), "local driver: size limit of the dependencies a build installs, Python's or npm's (env SLESS_DEPS_MAX_BYTES)")
	fs.StringVar(&c.Driver, "driver", env("SLESS_DRIVER", "local"), "where functions run: local (processes) or kubernetes (env SLESS_DRIVER)")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", env("KUBECONFIG", ""), "kubeconfig file; empty uses the in-cluster service account (env KUBECONFIG)")
	fs.StringVar(&c.Registry, "registry", env("SLESS_REGISTRY", ""), "image registry prefix for function images, e.g. registry.example.com/sless (env SLESS_REGISTRY)")
	fs.StringVar(&c.BuildNamespace, "build-namespace", env("SLESS_BUILD_NAMESPACE", "sless-builds"), "namespace of the kaniko build Jobs (env SLESS_BUILD_NAMESPACE)")
	fs.StringVar(&c.SystemNS, "system-namespace", env("SLESS_SYSTEM_NAMESPACE", "sless-system"), "namespace of the control plane (env SLESS_SYSTEM_NAMESPACE)")
	fs.StringVar(&c.KanikoImage, "kaniko-image", env("SLESS_KANIKO_IMAGE", ""), "kaniko image, pinned by digest in production (env SLESS_KANIKO_IMAGE)")
	fs.BoolVar(&c.BuildCache, "build-cache", env("SLESS_BUILD_CACHE", "") == "true", "kaniko layer cache (env SLESS_BUILD_CACHE=true)")
	fs.StringVar(&c.BuildCacheRepo, "build-cache-repo", env("SLESS_BUILD_CACHE_REPO", ""), "kaniko cache repository (env SLESS_BUILD_CACHE_REPO)")
	fs.StringVar(&c.BuildS3URL, "build-s3-url", env("SLESS_BUILD_S3_URL", ""), "S3 URL as build pods reach it; default http(s)://S3_ENDPOINT (env SLESS_BUILD_S3_URL)")
	fs.StringVar(&c.RegistryMirrors, "registry-mirrors", env("SLESS_REGISTRY_MIRRORS", ""), "kubernetes: registries whose images builds pull from a mirror instead, e.g. index.docker.io=mirror.internal:5000,gcr.io=mirror.internal:5000 (env SLESS_REGISTRY_MIRRORS)")
	fs.StringVar(&c.InsecureRegistries, "insecure-registries", env("SLESS_INSECURE_REGISTRIES", ""), "kubernetes: registries builds pull from and push to over plain HTTP, comma-separated host:port (env SLESS_INSECURE_REGISTRIES)")
	fs.StringVar(&c.FunctionEndpoint, "function-endpoint", env("SLESS_FUNCTION_ENDPOINT", "service"), "kubernetes: how requests reach a function's pods: service (its Service's DNS name; needs cluster DNS) or endpointslices (a ready pod's address, for a control plane that balances itself or runs outside the cluster) (env SLESS_FUNCTION_ENDPOINT)")
	return c
}

// checkScaling refuses scaling settings out of range, naming the flag and
// its variable.
func (c *config) checkScaling() error {
	switch {
	case c.FnMaxInstances < 1 || c.FnMaxInstances > domain.MaxInstances:
		return fmt.Errorf("--fn-default-max-instances (SLESS_FN_DEFAULT_MAX_INSTANCES) must be 1 to %d, got %d", domain.MaxInstances, c.FnMaxInstances)
	case c.NSMaxInstances < 0:
		return fmt.Errorf("--namespace-max-instances (SLESS_NAMESPACE_MAX_INSTANCES) must be 0 (no cap) or more, got %d", c.NSMaxInstances)
	case c.StableWindow <= 0 || c.PanicWindow <= 0 || c.PanicWindow > c.StableWindow:
		return fmt.Errorf("--scale-stable-window and --scale-panic-window (SLESS_SCALE_STABLE_WINDOW, SLESS_SCALE_PANIC_WINDOW) must be positive, the panic window no longer than the stable one; got %s and %s", c.StableWindow, c.PanicWindow)
	case c.WarmPool < 0:
		return fmt.Errorf("--warm-pool (SLESS_WARM_POOL) must be 0 (off) or more, got %d", c.WarmPool)
	}
	return nil
}

func (c *config) path(parts ...string) string {
	return filepath.Join(append([]string{c.DataDir}, parts...)...)
}

// parseArgs parses flags that may come before or after the positional
// arguments (`sless migrate up --data-dir x`) and returns the positionals.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// trustedProxies parses --trusted-proxies.
func (c *config) trustedProxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range splitList(c.TrustedProxy) {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("--trusted-proxies: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// splitList splits a comma-separated list, dropping empty items and spaces.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
