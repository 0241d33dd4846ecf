package pglocal

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/internal/testutil"
)

// supervised starts a cluster whose log lines go to the returned buffer.
func supervised(t *testing.T, restartTimeout time.Duration) (*Cluster, *testutil.SyncBuffer) {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	c := start(t, Options{Dir: filepath.Join(baseDir(t), "data"), Settings: map[string]string{"fsync": "off"},
		RestartTimeout: restartTimeout, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	return c, logs
}

// killPostmaster kills the current postmaster as the OOM killer would.
func killPostmaster(t *testing.T, c *Cluster) {
	t.Helper()
	if err := syscall.Kill(c.current().cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds or a generous deadline passes (the
// machine is shared: the deadline only catches a hang).
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after 60s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestRestartsAKilledServer(t *testing.T) {
	t.Parallel()
	skipWithoutBinaries(t)
	ctx := context.Background()
	c, logs := supervised(t, time.Minute)
	port := c.Port()
	writeKept(t, c.URL("postgres"))

	killedAt := time.Now()
	killPostmaster(t, c)
	eventually(t, "query after kill -9", func() error {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var v string
		return conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v)
	})
	t.Logf("answering again %s after kill -9", time.Since(killedAt).Round(time.Millisecond))
	if c.Port() != port {
		t.Errorf("Port() = %d after the restart, want %d (clients hold the URL)", c.Port(), port)
	}
	eventually(t, "back-up log line", func() error {
		if strings.Count(logs.String(), "back up") == 0 {
			return context.DeadlineExceeded
		}
		return nil
	})
	for _, line := range []string{"is down", "restarting", "back up"} {
		if n := strings.Count(logs.String(), line); n != 1 {
			t.Errorf("%d log lines with %q, want 1:\n%s", n, line, logs)
		}
	}
	select {
	case <-c.Done():
		t.Fatalf("Done closed after a successful restart: %v", c.Err())
	default:
	}

	// Stop while the server is down (or already restarting) ends it all cleanly.
	killPostmaster(t, c)
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if err := c.Err(); err != nil {
		t.Errorf("Err() after Stop = %v, want nil", err)
	}
	if err := c.ping(ctx); err == nil {
		t.Error("the server answers after Stop")
	}
}

func TestGivesUpWhenTheServerCannotRestart(t *testing.T) {
	t.Parallel()
	skipWithoutBinaries(t)
	// Long enough for the failing server to start and say why on a loaded
	// machine (2 s was not, once, under the whole test run).
	const restartTimeout = 10 * time.Second
	c, logs := supervised(t, restartTimeout)
	// A data directory that no server can open any more.
	if err := os.WriteFile(filepath.Join(c.DataDir(), "PG_VERSION"), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	killPostmaster(t, c)
	select {
	case <-c.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("no fatal report 60s after kill -9 with a %s restart timeout", restartTimeout)
	}
	t.Logf("gave up %s after kill -9", time.Since(killedAt).Round(time.Millisecond))
	err := c.Err()
	if err == nil || !strings.Contains(err.Error(), "could not be restarted within 10s") {
		t.Fatalf("Err() = %v, want a report of the failed restart", err)
	}
	if !strings.Contains(err.Error(), "PG_VERSION") && !strings.Contains(err.Error(), "incompatible") {
		t.Errorf("Err() = %v, want the server's own reason in it", err)
	}
	for _, line := range []string{"is down", "restarting", "giving up"} {
		if n := strings.Count(logs.String(), line); n != 1 {
			t.Errorf("%d log lines with %q, want 1:\n%s", n, line, logs)
		}
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Errorf("Stop after giving up: %v", err)
	}
}
