package pgtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
)

// containerImage is the server the container tier runs.
const containerImage = "postgres:16-alpine"

// startContainer runs containerImage when a Docker engine answers. Without one
// it returns within a few seconds and prints nothing.
func startContainer(ctx context.Context) (*server, error) {
	// testcontainers logs every step to stderr; the harness reports what matters.
	tclog.SetDefault(tclog.NewNoopLogger())
	if err := dockerAnswers(ctx); err != nil {
		return nil, fmt.Errorf("no Docker engine: %w", err)
	}
	password, err := randomHex(12)
	if err != nil {
		return nil, err
	}
	cmd := []string{"postgres"}
	for _, k := range slices.Sorted(maps.Keys(testSettings)) {
		cmd = append(cmd, "-c", k+"="+testSettings[k])
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute) // includes pulling the image
	defer cancel()
	ctr, err := testcontainers.Run(ctx, containerImage,
		testcontainers.WithEnv(map[string]string{
			"POSTGRES_USER":     "postgres",
			"POSTGRES_PASSWORD": password,
			"POSTGRES_DB":       "postgres",
		}),
		testcontainers.WithCmd(cmd...),
		testcontainers.WithExposedPorts("5432/tcp"),
		// The image's entrypoint starts a temporary server first; ready twice
		// means the real one is up.
		testcontainers.WithWaitStrategy(
			wait.ForLog("database system is ready to accept connections").WithOccurrence(2),
			wait.ForListeningPort("5432/tcp"),
		),
	)
	if err != nil {
		if ctr != nil {
			_ = ctr.Terminate(context.Background())
		}
		return nil, fmt.Errorf("start %s: %w", containerImage, err)
	}
	hostPort, err := ctr.PortEndpoint(ctx, "5432/tcp", "")
	if err != nil {
		_ = ctr.Terminate(context.Background())
		return nil, fmt.Errorf("container endpoint: %w", err)
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword("postgres", password),
		Host:     hostPort,
		Path:     "/postgres",
		RawQuery: "sslmode=disable",
	}
	return &server{
		source:   containerImage + " container",
		adminURL: u.String(),
		close:    func(ctx context.Context) error { return ctr.Terminate(ctx) },
	}, nil
}

// dockerAnswers asks the Docker engine testcontainers would use for its info,
// within a short deadline so that machines without Docker fall through quickly.
func dockerAnswers(ctx context.Context) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	defer func() {
		// testcontainers panics on some host-detection paths instead of erring.
		if r := recover(); r != nil {
			err = fmt.Errorf("docker host detection: %v", r)
		}
	}()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if cli == nil {
		return errors.New("no client")
	}
	return nil
}

// DockerAnswers reports whether a Docker engine answers testcontainers (nil)
// within a few seconds, for tests that start containers of their own with
// the same fallback as pgtest's.
func DockerAnswers(ctx context.Context) error { return dockerAnswers(ctx) }
