package workers_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/workers"
)

// childDBEnv carries the parent test's database URL to a child process that
// runs TestRescueChildProcess: workers whose job runs block until the parent
// kills the process with SIGKILL.
const childDBEnv = "SLESS_WORKERS_TEST_CHILD_DB"

// TestRescueChildProcess is not a test of its own: run by TestRescue* in a
// child process, it starts workers on the parent's database, prints its River
// client ID and works jobs until it is killed; every job run blocks.
func TestRescueChildProcess(t *testing.T) {
	url := os.Getenv(childDBEnv)
	if url == "" {
		t.Skip("only run as the child process of TestRescue*")
	}
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	d := newScriptedDriver()
	d.onRun = func(ctx context.Context, r driver.RunSpec) (driver.RunResult, error) {
		<-ctx.Done()
		return driver.RunResult{}, ctx.Err()
	}
	w, err := workers.New(pool, workers.Config{Driver: d, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("client_id=" + w.ClientID() + "\n")
	select {} // until SIGKILL
}

// TestRescueAfterKill9 runs a job run (or a cron run) in a child process,
// kills the process with SIGKILL mid-run and checks that the run is taken up
// again within seconds (River alone would wait 45 minutes): on a replica that
// was running all along (the leader's periodic rescue, the dead process
// having been the leader), and on a process started after the kill (the
// rescue at start). A retry-safe function's run runs again; any other does
// not run twice: a job run fails "interrupted by a crash". Either way each
// attempt leaves one row in the invocation log, the one the crash killed too.
func TestRescueAfterKill9(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                          string
		replicaFirst, retrySafe, cron bool
	}{
		{"running replica", true, true, false},
		{"restart", false, true, false},
		{"restart, not retry-safe", false, false, false},
		{"cron run, restart", false, true, true},
		{"cron run, running replica, not retry-safe", true, false, true},
	} {
		replicaFirst := c.replicaFirst
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			first := h.start()
			spec := pySpec
			spec.RetrySafe = c.retrySafe
			h.readyFunction("fn", spec)
			// The run the child takes: job crash's run 1, or a slot of cron
			// trigger crash, whose own slots are a year apart.
			kind, name, path := "run_job", "crash", "crash/1"
			slot := at(10, 0)
			if c.cron {
				kind, name = "cron_run", fmt.Sprintf("crash-%d", slot.Unix())
				path = name
				h.createTrigger("crash", domain.TriggerCron, "fn", "0 0 1 1 *", true)
				h.waitActive("crash", true)
			}
			if err := first.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if c.cron {
				h.insertCronRun("crash", slot)
			} else {
				h.createJob("crash", "fn", scriptedRun{Stdout: "done\n"}, 1)
			}
			child, id := startChild(t, h.pool.Config().ConnString())
			h.eventually(30*time.Second, func() error {
				if n := h.count(`SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'running'
					AND attempted_by[cardinality(attempted_by)] = $2`, kind, id); n != 1 {
					return errorf("the child %s has not taken the run yet", id)
				}
				if c.cron {
					return nil
				}
				if j := h.job("crash"); j.Phase != domain.JobPhaseRunning {
					return errorf("the child has not started the run yet: job %s", j.Phase)
				}
				return nil
			})

			var mu sync.Mutex
			var rerunAt time.Time
			h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
				d.onRun = func(ctx context.Context, r driver.RunSpec) (driver.RunResult, error) {
					mu.Lock()
					if rerunAt.IsZero() {
						rerunAt = time.Now()
					}
					mu.Unlock()
					return driver.RunResult{Stdout: "done\n"}, nil
				}
			})
			rec := &memRecorder{}
			withRec := func(c *workers.Config) { c.Invocations = rec }
			if replicaFirst {
				h.start(withRec)
			}
			killed := time.Now()
			if err := child.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = child.Wait()
			if !replicaFirst {
				h.start(withRec)
			}
			h.eventually(30*time.Second, func() error {
				if s, _ := h.jobAttempts(kind, "namespace", h.ns); s != "completed" {
					return errorf("%s job %q; want completed", kind, s)
				}
				return nil
			})
			if len(h.logs.Lines("rescued a job of a dead process", id)) == 0 {
				t.Fatalf("no rescue of %s logged", id)
			}
			runs := h.driver.runsNamed(func(r driver.RunSpec) bool { return r.Name == name })
			if !c.retrySafe {
				t.Logf("kill -9 to the run stopped: %s", time.Since(killed).Round(time.Millisecond))
				if !c.cron {
					if j := h.job("crash"); j.Phase != domain.JobPhaseFailed || !strings.Contains(j.Message, "interrupted by a crash") {
						t.Fatalf("job %s %q; want Failed, interrupted by a crash", j.Phase, j.Message)
					}
				}
				if len(runs) != 0 {
					t.Fatalf("the run of a function that is not retry-safe ran again: %+v", runs)
				}
				h.eventually(10*time.Second, func() error { // recorded right after the outcome
					if got := rec.statuses(path); len(got) != 1 || !strings.HasPrefix(got[0], "503 interrupted by a crash") || !strings.Contains(got[0], "not run again") {
						return errorf("invocations %q; want one 503 interrupted by a crash, not run again", got)
					}
					return nil
				})
				return
			}
			mu.Lock()
			t.Logf("kill -9 to the run running again: %s", rerunAt.Sub(killed).Round(time.Millisecond))
			mu.Unlock()
			if !c.cron {
				if j := h.job("crash"); j.Phase != domain.JobPhaseSucceeded {
					t.Fatalf("job %s %q; want Succeeded", j.Phase, j.Message)
				}
				if n := h.events(domain.JobStream(h.ns, "crash"), domain.EventJobSucceeded); n != 1 {
					t.Fatalf("%d JobSucceeded events, want 1", n)
				}
			}
			if len(runs) != 1 || runs[0].Version != 1 {
				t.Fatalf("runs here = %+v; want one rerun on v1", runs)
			}
			// One row per attempt: the one that died with the child, then the rerun.
			h.eventually(10*time.Second, func() error {
				got := rec.statuses(path)
				if len(got) != 2 || !strings.HasPrefix(got[0], "503 interrupted by a crash") || !strings.Contains(got[0], "run again") || got[1] != "200" {
					return errorf("invocations %q; want the attempt the crash interrupted (503, run again), then 200", got)
				}
				return nil
			})
		})
	}
}

// startChild starts TestRescueChildProcess on database url and returns the
// process and its River client ID.
func startChild(t *testing.T, url string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRescueChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childDBEnv+"="+url)
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("child stderr:\n%s", stderr.String())
		}
	})
	ids := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "client_id="); ok {
				ids <- id
			}
		}
		close(ids)
	}()
	select {
	case id, ok := <-ids:
		if !ok {
			t.Fatalf("the child exited without starting: %s", stderr.String())
		}
		return cmd, id
	case <-time.After(60 * time.Second):
		t.Fatalf("the child did not start: %s", stderr.String())
	}
	return nil, ""
}
