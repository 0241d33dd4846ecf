package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store/pgtest"
)

// devServer is `sless dev` run in the test's process, on a free port, a
// data dir of its own and a pgtest database.
type devServer struct {
	base        string // http://127.0.0.1:port
	dataDir     string
	databaseURL string
	stdout      *testutil.SyncBuffer
	stderr      *testutil.SyncBuffer
	cancel      context.CancelFunc
	done        chan error
}

// startDev starts `sless dev` for t; it is stopped when t ends (stop stops
// it earlier and returns how it exited).
func startDev(t *testing.T) *devServer {
	t.Helper()
	return startDevWith(t)
}

// startDevWith is startDev with more arguments for `sless dev`.
func startDevWith(t *testing.T, args ...string) *devServer {
	t.Helper()
	dbURL := pgtest.NewDBURL(t)
	dev, base := devArgs(t, dbURL)
	ctx, cancel := context.WithCancel(context.Background())
	d := &devServer{base: base, dataDir: dev[2], databaseURL: dbURL,
		stdout: &testutil.SyncBuffer{}, stderr: &testutil.SyncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() {
		d.done <- run(ctx, append(dev, args...), d.stdout, d.stderr)
	}()
	t.Cleanup(func() {
		if err := d.stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("sless dev output:\n%s", d.stderr.String())
		}
	})
	return d
}

// stop stops dev and returns its error, or one saying it did not stop.
func (d *devServer) stop() error {
	d.cancel()
	select {
	case err := <-d.done:
		d.done <- err // a second stop sees the same
		return err
	case <-time.After(60 * time.Second):
		return context.DeadlineExceeded
	}
}

// waitReady waits until dev answers /readyz.
func (d *devServer) waitReady(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, 60*time.Second, func() bool {
		resp, err := http.Get(d.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// token mints a token for sub with dev's signing key, an operator's when admin.
func (d *devServer) token(t *testing.T, sub string, admin bool) string {
	t.Helper()
	key, err := auth.LoadOrCreateKey(d.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	var extra map[string]any
	if admin {
		extra = map[string]any{"sless_admin": true}
	}
	tok, err := auth.Mint(key, sub, time.Hour, extra)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
