package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// TestDiskFull: the data dir is a small tmpfs that a file fills up; what
// fails says why, what does not need the disk goes on, and space coming back
// is enough to recover.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	const scenario = "disk full"
	w := newWorld(t)
	p := w.newPlane("a")
	if err := os.MkdirAll(p.dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "sless-faults", p.dataDir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs on the data dir: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		p.killGroup()
		// The sandbox may still be leaving it: lazily.
		if out, err := exec.Command("umount", "-l", p.dataDir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v\n%s", p.dataDir, err, out)
		}
	})
	p.start()
	tn := newTenant(t, p, "diskfull")
	tn.deploy(p, "echo", echoHandler(1), false, true)
	c := tn.api(p)
	ctx := context.Background()

	filler := filepath.Join(p.dataDir, "filler")
	fill(t, filler)
	var statfs syscall.Statfs_t
	_ = syscall.Statfs(p.dataDir, &statfs)
	t.Logf("data dir full: %d bytes free", statfs.Bavail*uint64(statfs.Bsize))

	// What does not need the data dir goes on.
	fnStatus, fnBody, _ := get(httpClient(), tn.fnURL(p, "echo"))
	_, createErr := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "later", Runtime: "python3.11"})
	promise(t, scenario, "with the disk full, /fn of a running function and API writes go on",
		fnStatus == 200 && versionOf(fnBody) == 1 && createErr == nil, "/fn %d %s; create: %v", fnStatus, strings.TrimSpace(fnBody), errOrOK(createErr))

	// A build needs the disk: it fails, saying why, and v1 serves on.
	v := tn.upload(p, "echo", echoHandler(2))
	var ver *client.Version
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if ver, _ = c.GetVersion(ctx, "echo", v); ver != nil && (ver.BuildStatus == domain.BuildStatusFailed || ver.BuildStatus == domain.BuildStatusSucceeded) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	fn, _ := c.GetFunction(ctx, "echo")
	fnStatus, fnBody, _ = get(httpClient(), tn.fnURL(p, "echo"))
	buildStatus, msg := domain.BuildStatus("unknown"), ""
	if ver != nil {
		buildStatus, msg = ver.BuildStatus, ver.Message
	}
	phase := domain.FunctionPhase("unknown")
	if fn != nil {
		phase = fn.Phase
	}
	promise(t, scenario, "a build with the disk full fails, saying so; the active version serves on",
		buildStatus == domain.BuildStatusFailed && strings.Contains(strings.ToLower(msg), "no space left") && phase == domain.PhaseReady && versionOf(fnBody) == 1,
		"v%d build %s: %.160q; function %s, /fn %d %s", v, buildStatus, msg, phase, fnStatus, strings.TrimSpace(fnBody))

	if buildStatus != domain.BuildStatusFailed {
		w.logJobs("build")
	}

	// Space again: the same code builds and serves.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	res, err := c.Upload(ctx, "echo", zipOf(t, echoHandler(2)))
	if err != nil {
		promise(t, scenario, "space again: the same code builds and serves", false, "upload: %v", err)
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	_, err = c.WaitServing(wctx, "echo", res.Version.Version, 100*time.Millisecond, nil)
	cancel()
	fnStatus, fnBody, _ = get(httpClient(), tn.fnURL(p, "echo"))
	promise(t, scenario, "space again: the same code builds and serves", err == nil && versionOf(fnBody) == 2,
		"v%d serving %s after the filler's removal (%v); /fn %d %s", res.Version.Version, secs(time.Since(freed)), errOrOK(err), fnStatus, strings.TrimSpace(fnBody))
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatalf("fill %s: %v", path, err)
		}
	}
}

func errOrOK(err error) string {
	if err == nil {
		return "ok"
	}
	return fmt.Sprint(err)
}
