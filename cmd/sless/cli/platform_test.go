package cli_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/s3embed"
	"github.com/slessio/sless/store/pgtest"
	"github.com/slessio/sless/workers"
)

// platformOptions configure platform.
type platformOptions struct {
	// callbackAllow is the operator's callback allow-list (SLESS_CALLBACK_ALLOW).
	callbackAllow string
}

// platform starts sless as `sless serve` wires it, in the test's process:
// the API with the function proxy, the workers (builds, rollouts,
// asynchronous deliveries) and the local driver, on a private database (its
// River client must not work the jobs of other tests) and an embedded S3
// server. It returns the API's URL and a token of user sub; everything
// stops when the test ends. Functions run for real: the test needs what
// the local driver needs (python3, bubblewrap).
func platform(t *testing.T, sub string, opts platformOptions) (string, string) {
	t.Helper()
	ctx := context.Background()
	logs := &testutil.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("platform logs:\n%s", logs.String())
		}
	})

	cfg, err := pgxpool.ParseConfig(pgtest.NewDBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 20 // River's client and listener, the proxy's listener, the API, the invocation log
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s3, err := s3embed.Start(ctx, s3embed.Options{Dir: t.TempDir(), AccessKey: "cli-test", SecretKey: "cli-test-secret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s3.Close() })
	code, err := codestore.New(ctx, codestore.Config{Endpoint: s3.URL(), AccessKey: "cli-test", SecretKey: "cli-test-secret", Bucket: "sless-code"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := localdriver.New(localdriver.Options{Dir: t.TempDir(), Logger: log.With("component", "driver"),
		Drain: 100 * time.Millisecond, StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = d.Close(ctx)
	})
	allow, err := domain.ParseCallbackAllow(opts.callbackAllow)
	if err != nil {
		t.Fatal(err)
	}

	// The proxy reads routes with a store of its own and records the
	// invocation log; the workers deliver queued calls through it.
	logStore := store.New(pool, nil)
	writer := logStore.NewInvocationWriter(store.InvocationWriterOptions{FlushInterval: 10 * time.Millisecond, Logger: log})
	t.Cleanup(func() { _ = writer.Close(context.Background()) })
	p, err := proxy.New(proxy.Config{Store: logStore, Invocations: writer, Scaler: proxy.DriverScaler{Driver: d, Store: logStore},
		IdleTimeout: -1, Logger: log.With("component", "proxy")})
	if err != nil {
		t.Fatal(err)
	}
	w, err := workers.New(pool, workers.Config{Driver: d, Code: code, Invocations: p, Invoker: p, CallbackAllow: allow,
		CronInterval: 100 * time.Millisecond, Logger: log.With("component", "workers")})
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := auth.NewVerifier(auth.Config{HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(httpapi.Config{Store: w.Store(), Code: code, Verifier: verifier, ExternalURL: "http://sless.example.test",
		RateLimit: -1, Proxy: p, CallbackAllow: allow, Logger: log.With("component", "api")})
	if err != nil {
		t.Fatal(err)
	}
	p.UseEnqueuer(api.Commands())
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)

	tok, err := auth.Mint(secret, sub, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL, tok
}
