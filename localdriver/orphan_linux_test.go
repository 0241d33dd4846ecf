package localdriver_test

import (
	"bufio"
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

	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox/sandboxtest"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// helperEnv makes the test binary a driver host (see TestMain) instead of
// running tests.
const helperEnv = "LOCALDRIVER_TEST_HOST_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		if err := hostDriver(dir); err != nil {
			fmt.Fprintln(os.Stderr, "host:", err)
			os.Exit(1)
		}
		select {} // until killed
	}
	os.Exit(m.Run())
}

// hostDriver builds dir/code/hello.zip, deploys it, starts a job that
// sleeps, prints the endpoint and returns, leaving both running.
func hostDriver(dir string) error {
	d, err := localdriver.New(localdriver.Options{Dir: dir, Logger: discard})
	if err != nil {
		return err
	}
	ctx := context.Background()
	res, err := d.Build(ctx, driver.BuildSpec{Namespace: ns, Function: "orphan", Version: 1, Digest: "d",
		ZipKey: "hello.zip", Config: pyConfig(nil), Code: fileCode(filepath.Join(dir, "code"))})
	if err != nil || res.Failed {
		return fmt.Errorf("build: %v %s", err, res.Message)
	}
	w := driver.Workload{Namespace: ns, Function: "orphan", Version: 1, Image: res.Image, Config: pyConfig(nil)}
	endpoint, err := d.Deploy(ctx, driver.Deployment{Workload: w, Replicas: 1})
	if err != nil {
		return err
	}
	sleeper := w
	sleeper.Config.Entrypoint = "sleeper.handle"
	go d.Run(ctx, driver.RunSpec{Workload: sleeper})
	time.Sleep(300 * time.Millisecond) // the job's process is started
	fmt.Println(endpoint)
	return nil
}

// TestDriverDeathKillsFunctions kills the process hosting a driver with
// SIGKILL (no Close): its function and job processes must die with it.
func TestDriverDeathKillsFunctions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{"handler.py": pyHello["handler.py"], "sleeper.py": "import time\ndef handle(event):\n    time.sleep(300)\n"}
	if err := os.MkdirAll(filepath.Join(dir, "code"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "code", "hello.zip"), ziptest.Files(t, files), 0o644); err != nil {
		t.Fatal(err)
	}
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), helperEnv+"="+dir)
	host.Stderr = os.Stderr
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = host.Process.Kill()
		_ = host.Wait()
		for _, pid := range sandboxtest.PIDs(dir) { // orphans of a failed run
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("host printed no endpoint: %v", err)
	}
	endpoint := strings.TrimSpace(line)
	mustHello(t, endpoint)
	functions := 0
	for _, pid := range sandboxtest.PIDs(dir) {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) != "bwrap" {
			functions++ // not the sandbox's own init
		}
	}
	if functions != 2 {
		t.Fatalf("%d function processes run, want the server and the job: %v", functions, sandboxtest.Describe(dir))
	}

	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for len(sandboxtest.Describe(dir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes outlived their driver: %v", sandboxtest.Describe(dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A process still closing its files is no longer listed in /proc's
	// mount information, and its listening socket may answer with a reset
	// for a moment: wait for the port to refuse.
	for {
		_, err := getHello(endpoint)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoint after the driver died: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
