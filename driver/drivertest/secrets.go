package drivertest

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
)

// testSecrets deploys a version that uses a secret as an environment
// variable and another, at a pinned version older than the newest, as a
// file: the instance and a run see both values, exactly, and cannot change
// the file. Once that version of the file's secret is deleted, the version
// no longer starts: Deploy is EUNPROCESSABLE naming the secret, and no
// value.
func testSecrets(t *testing.T, h Harness) {
	vault := fakeVaultOf(t, h)
	x := newFn(t, h, "secrets")
	token := "tok-" + randomHex(t) + " with spaces=and=equals"
	keyPart := randomHex(t)
	file := []byte("-----BEGIN KEY-----\n\x00\xff" + keyPart + "\n")
	vault.set(x.ns, "api-token", 1, []byte(token))
	vault.set(x.ns, "tls-key", 1, []byte("an older value"))
	vault.set(x.ns, "tls-key", 2, file)

	s := secretsSample()
	cfg := config(s, map[string]string{"SAMPLE_SECRET_FILE": "tls-key"}, 0)
	cfg.Secrets = map[string]string{"SAMPLE_TOKEN": "api-token"}
	cfg.SecretFiles = []string{"tls-key"}
	cfg.SecretVersions = map[string]int{"api-token": 1, "tls-key": 2}
	w := x.mustBuild(s, cfg)

	check := func(where string, a secretAnswer) {
		t.Helper()
		if a.Token != token || a.File != hex.EncodeToString(file) || len(a.Changed) > 0 {
			t.Fatalf("%s: token %q, file %q, changed %v; want token %q, file %x (version 2), nothing changed",
				where, a.Token, a.File, a.Changed, token, file)
		}
	}
	endpoint := x.mustDeploy(w)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var a secretAnswer
	if err := h.request(ctx, client, endpoint, "/", &a); err != nil {
		t.Fatal(err)
	}
	check("instance", a)
	res := x.run(w, `{}`)
	if res.ExitCode != 0 {
		t.Fatalf("job = exit %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if err := json.Unmarshal([]byte(lastLine(res.Stdout)), &a); err != nil {
		t.Fatalf("job result %q: %v", lastLine(res.Stdout), err)
	}
	check("run", a)

	if ep, err := x.deploy(w, 0); err != nil || ep != "" {
		t.Fatalf("scale to zero = %q, %v", ep, err)
	}
	vault.delete(x.ns, "tls-key", 2)
	_, err := x.deploy(w, 1)
	msg := domain.ErrorMessage(err)
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE || !strings.Contains(msg, "tls-key") {
		t.Fatalf("Deploy of a version whose secret version was deleted = %v; want EUNPROCESSABLE naming tls-key", err)
	}
	if strings.Contains(msg, token) || strings.Contains(msg, keyPart) || strings.Contains(msg, hex.EncodeToString(file)) {
		t.Fatalf("the error holds a secret value: %s", msg)
	}
}

// secretAnswer is what secretsSample returns.
type secretAnswer struct {
	Token   string   `json:"token"`
	File    string   `json:"file"`
	Changed []string `json:"changed"`
}

// fakeVault is an in-memory stand-in for the platform's vault of secret
// values (package secrets), which the suite does not test: its subject is
// the driver, which opens values through a driver.SecretOpener only.
type fakeVault struct {
	mu     sync.Mutex
	values map[fakeSecret][]byte
}

type fakeSecret struct {
	ns, name string
	version  int
}

var _ driver.SecretOpener = (*fakeVault)(nil)

// OpenSecret implements driver.SecretOpener: ENOTFOUND for a version never
// set or deleted, as the vault's.
func (v *fakeVault) OpenSecret(_ context.Context, ns, name string, version int) ([]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	value, ok := v.values[fakeSecret{ns, name, version}]
	if !ok {
		return nil, domain.Errorf(domain.ENOTFOUND, "version %d of secret %q not found", version, name)
	}
	return bytes.Clone(value), nil
}

func (v *fakeVault) set(ns, name string, version int, value []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.values[fakeSecret{ns, name, version}] = bytes.Clone(value)
}

func (v *fakeVault) delete(ns, name string, version int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.values, fakeSecret{ns, name, version})
}

var (
	fakeVaultsMu sync.Mutex
	fakeVaults   = map[driver.Driver]*fakeVault{}
)

// fakeVaultOf returns the fake vault the harness's driver opens secrets
// with, handing it one (driver.SecretOpenerUser) on first use: cases run in
// parallel on one driver, each in its own namespace, and share it.
func fakeVaultOf(t *testing.T, h Harness) *fakeVault {
	t.Helper()
	user, ok := h.Driver.(driver.SecretOpenerUser)
	if !ok {
		t.Fatalf("drivertest: the driver (%T) does not implement driver.SecretOpenerUser, so it cannot deliver secrets", h.Driver)
	}
	fakeVaultsMu.Lock()
	defer fakeVaultsMu.Unlock()
	v := fakeVaults[h.Driver]
	if v == nil {
		v = &fakeVault{values: map[fakeSecret][]byte{}}
		fakeVaults[h.Driver] = v
		user.UseSecrets(v)
	}
	return v
}
