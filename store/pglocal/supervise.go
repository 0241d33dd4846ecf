package pglocal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Restart backoff: the first attempt follows a crash almost at once (the
// leftover children are killed first), later ones wait longer.
const (
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 5 * time.Second
)

// supervise watches the postmaster p and, when it dies while the cluster is not
// being stopped, restarts it on the same port until c.restartTimeout has passed.
// It closes c.done when the cluster is over, setting c.err when it gave up.
//
//	running ──(postmaster killed or crashed)──▶ down ──▶ restarting ──▶ running
//	   │                                                     │
//	   │ (exit 0: shut down from outside)                    │ (timeout, or another
//	   ▼                                                     ▼  server took the data)
//	given up ◀───────────────────────────────────────────────┘
//
// Each transition is logged once; Stop ends supervision from any state.
func (c *Cluster) supervise(p *process) {
	defer close(c.done)
	for {
		<-p.done
		if c.isStopping() {
			return
		}
		if p.err == nil {
			// A postmaster exits 0 only when asked to shut down (pg_ctl stop,
			// or a second sless taking over the data directory): not ours to undo.
			c.err = fmt.Errorf("postgres in %s was shut down by another process", c.dataDir)
			c.log.Error("embedded PostgreSQL was shut down from outside; giving up", "error", c.err)
			return
		}
		downAt := time.Now()
		c.log.Error("embedded PostgreSQL is down", "error", p.err)
		p.killGroup()
		c.log.Info("restarting embedded PostgreSQL", "give_up_after", c.restartTimeout)
		next, attempts, err := c.restart()
		if err != nil {
			if c.isStopping() {
				return
			}
			c.err = fmt.Errorf("postgres in %s died (%v) and could not be restarted within %s: %w", c.dataDir, p.err, c.restartTimeout, err)
			c.log.Error("giving up on embedded PostgreSQL", "attempts", attempts, "error", oneLine(err))
			return
		}
		c.log.Info("embedded PostgreSQL is back up", "attempts", attempts, "downtime", time.Since(downAt).Round(time.Millisecond))
		p = next
	}
}

// restart launches the postmaster again with backoff until it accepts
// connections, c.restartTimeout passes, or Stop is called.
func (c *Cluster) restart() (p *process, attempts int, err error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.restartTimeout)
	defer cancel()
	wait := firstBackoff
	for attempts = 1; ; attempts++ {
		if err := c.checkNotTakenOver(); err != nil {
			return nil, attempts, err
		}
		p, err = c.launch(ctx)
		if err == nil {
			return p, attempts, nil
		}
		select {
		case <-ctx.Done():
			return nil, attempts, err
		case <-time.After(wait):
		}
		wait = min(2*wait, maxBackoff)
	}
}

// checkNotTakenOver fails when another live postmaster holds the data
// directory: a second sless has taken it over, and restarting would fight it.
func (c *Cluster) checkNotTakenOver() error {
	b, err := os.ReadFile(filepath.Join(c.dataDir, "postmaster.pid"))
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 0 || pid == c.current().cmd.Process.Pid || !isPostgres(pid) {
		return nil
	}
	return fmt.Errorf("another server (pid %d) now runs on %s", pid, c.dataDir)
}

func (c *Cluster) isStopping() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopping
}

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
