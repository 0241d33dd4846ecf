package provider_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox/sandboxtest"
	"github.com/slessio/sless/store/pgtest"
	"github.com/slessio/sless/terraform-provider-sless/internal/provider"
)

// repoRoot is the main module's directory, from this package's.
const repoRoot = "../../.."

// TestMain prepares what the acceptance tests drive: a real terraform (from
// TF_ACC_TERRAFORM_PATH, PATH, or bin/terraform, which `go tool task
// terraform` installs), the provider under the source address slessio/sless,
// and PostgreSQL through pgtest.
func TestMain(m *testing.M) {
	os.Setenv("TF_ACC", "1")
	os.Setenv("TF_ACC_PROVIDER_NAMESPACE", "slessio") // so configs may say source = "slessio/sless"
	os.Setenv("CHECKPOINT_DISABLE", "1")
	if os.Getenv("TF_ACC_TERRAFORM_PATH") == "" {
		tf, err := exec.LookPath("terraform")
		if err != nil {
			tf, _ = filepath.Abs(filepath.Join(repoRoot, "bin", "terraform"))
			if _, err := os.Stat(tf); err != nil {
				fmt.Fprintln(os.Stderr, "no terraform binary: run `go tool task terraform` (installs terraform v1.5.7 into bin/ with go install), put one on PATH, or set TF_ACC_TERRAFORM_PATH")
				os.Exit(2)
			}
		}
		os.Setenv("TF_ACC_TERRAFORM_PATH", tf)
	}
	pgtest.Main(m)
}

// providers serves the provider in the test process (terraform reattaches to it).
var providers = map[string]func() (tfprotov6.ProviderServer, error){
	"sless": providerserver.NewProtocol6WithError(provider.New("test")()),
}

var (
	buildOnce sync.Once
	slessBin  string
	buildErr  error
)

// slessBinary builds cmd/sless once per test process, into bin/.
func slessBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := filepath.Abs(repoRoot)
		if err != nil {
			buildErr = err
			return
		}
		slessBin = filepath.Join(root, "bin", "sless")
		cmd := exec.Command("go", "build", "-o", slessBin, "./cmd/sless")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/sless: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return slessBin
}

// platform is a real control plane run by `sless dev` (embedded S3, local
// driver in the bubblewrap sandbox, a private database from pgtest) and a
// user of it.
type platform struct {
	URL     string // base URL, e.g. http://127.0.0.1:41234
	DataDir string
	Token   string
	Client  *client.Client
	pid     int // of sless dev itself
}

// startPlatform starts `sless dev` for t and stops it when t ends.
func startPlatform(t *testing.T) *platform {
	t.Helper()
	bin := slessBinary(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var out bytes.Buffer
	cmd := exec.Command(bin, "dev", "--data-dir", dataDir, "--listen", addr, "--database-url", pgtest.NewDBURL(t))
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "SLESS_IDLE_TIMEOUT=10m")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("sless dev did not stop within 30 s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("sless dev output:\n%s", out.String())
		}
	})
	p := &platform{URL: "http://" + addr, DataDir: dataDir, pid: cmd.Process.Pid}
	testutil.Eventually(t, 90*time.Second, func() error {
		select {
		case <-exited:
			t.Fatalf("sless dev exited:\n%s", out.String())
		default:
		}
		resp, err := http.Get(p.URL + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("readyz %d", resp.StatusCode)
		}
		return nil
	})
	key, err := auth.LoadOrCreateKey(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if p.Token, err = auth.Mint(key, "tf-"+strings.ToLower(t.Name()), time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	if p.Client, err = client.New(p.URL, p.Token); err != nil {
		t.Fatal(err)
	}
	return p
}

// providerBlock is the provider configuration for p.
func (p *platform) providerBlock() string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    sless = { source = "slessio/sless" }
  }
}

provider "sless" {
  endpoint = %q
  token    = %q
}
`, p.URL, p.Token)
}

// processes returns what runs of the platform's functions: the processes
// below its data dir other than sless dev itself and its idle warm pool.
func (p *platform) processes() []int {
	var pids []int
	for _, pid := range sandboxtest.PIDsBut(p.DataDir, localdriver.ServesNoFunction) {
		if pid != p.pid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// post sends body to url and returns the status and the answer.
func post(url, body string) (int, string, error) {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// writeFiles writes files below dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ctx is the context of the tests' own API calls.
var ctx = context.Background()
