package s3embed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// Options configures Start.
type Options struct {
	// Dir holds the buckets; it is created if missing and reused across restarts.
	Dir string
	// Addr is the listen address; empty means a free port on 127.0.0.1.
	Addr string
	// AccessKey and SecretKey, when set (both or neither), are the only
	// credentials accepted: every request must carry a valid AWS Signature V4.
	// When both are empty the server accepts any request, signed or not.
	AccessKey string
	SecretKey string
	// Buckets are created at start if missing.
	Buckets []string
	// AutoCreateBuckets makes a PUT into a missing bucket create it.
	AutoCreateBuckets bool
	// Logger receives server-side errors; nil discards them.
	Logger *slog.Logger
}

// Server is a running embedded S3 server.
type Server struct {
	ln       net.Listener
	http     *http.Server
	verifier *verifier
	served   chan struct{}
	once     sync.Once
	closeErr error
}

// Start opens the data directory, creates Options.Buckets and serves the S3
// protocol until Close is called or ctx is done. It fails if Dir is empty, if
// only one of AccessKey and SecretKey is set, or if the address is taken.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("s3embed: Options.Dir is required")
	}
	if (opts.AccessKey == "") != (opts.SecretKey == "") {
		return nil, errors.New("s3embed: set both AccessKey and SecretKey, or neither")
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("s3embed: create data dir: %w", err)
	}
	backend, err := openBackend(opts.Dir, time.Now)
	if err != nil {
		return nil, fmt.Errorf("s3embed: %w", err)
	}
	for _, b := range opts.Buckets {
		if err := backend.CreateBucket(b); err != nil && !gofakes3.IsAlreadyExists(err) {
			return nil, fmt.Errorf("s3embed: create bucket %q: %w", b, err)
		}
	}

	var logger gofakes3.Logger = gofakes3.DiscardLog()
	if opts.Logger != nil {
		logger = slogAdapter{opts.Logger}
	}
	fake := gofakes3.New(backend,
		gofakes3.WithAutoBucket(opts.AutoCreateBuckets),
		gofakes3.WithLogger(logger),
	)

	s := &Server{served: make(chan struct{})}
	if opts.AccessKey != "" {
		s.verifier = &verifier{accessKey: opts.AccessKey, secretKey: opts.SecretKey, now: time.Now}
	}
	var lc net.ListenConfig
	s.ln, err = lc.Listen(ctx, "tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("s3embed: listen: %w", err)
	}
	s.http = &http.Server{
		Handler:           s.front(fake.Server()),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	go func() {
		defer close(s.served)
		_ = s.http.Serve(s.ln)
	}()
	// Close is idempotent, so the registration may outlive an earlier Close.
	context.AfterFunc(ctx, func() { _ = s.Close() })
	return s, nil
}

// Endpoint returns the server's host:port, the form minio.New expects.
func (s *Server) Endpoint() string { return s.ln.Addr().String() }

// URL returns the server's base URL, e.g. http://127.0.0.1:40123.
func (s *Server) URL() string { return "http://" + s.Endpoint() }

// Close stops accepting requests, waits up to 5 s for those in flight, and
// returns once the server has stopped. Calling it again returns the first result.
func (s *Server) Close() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			s.closeErr = s.http.Close()
		}
		<-s.served
	})
	return s.closeErr
}

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Print(level gofakes3.LogLevel, v ...any) {
	switch level {
	case gofakes3.LogErr:
		a.l.Error("s3embed", "error", fmt.Sprint(v...))
	case gofakes3.LogWarn:
		a.l.Warn("s3embed", "warning", fmt.Sprint(v...))
	}
}
