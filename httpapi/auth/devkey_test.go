package auth

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
)

func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data", "nested")

	key, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != 32 {
		t.Fatalf("key has %d bytes, want 32", len(key))
	}
	info, err := os.Stat(filepath.Join(dir, DevKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Fatalf("key file mode %o, want 600", perm)
	}
	again, err := LoadOrCreateKey(dir)
	if err != nil || !bytes.Equal(key, again) {
		t.Fatalf("second call returned a different key (err %v)", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("dir holds %d entries, want only the key (temp file left behind?)", len(entries))
	}

	other, err := LoadOrCreateKey(t.TempDir())
	if err != nil || bytes.Equal(key, other) {
		t.Fatalf("two data dirs share a key (err %v)", err)
	}
}

func TestLoadOrCreateKey_ConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := make([][]byte, 20)
	errs := make([]error, 20)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = LoadOrCreateKey(dir) })
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil || !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("caller %d got %x (err %v), caller 0 got %x", i, keys[i], errs[i], keys[0])
		}
	}
}

func TestLoadOrCreateKey_CorruptFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DevKeyFile), []byte("not hex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadOrCreateKey(dir)
	testutil.RequireCode(t, err, "INVALID")
}

// TestLoadOrCreateKey_ReadableByOthers: a key group or others may read is
// refused, not used.
func TestLoadOrCreateKey_ReadableByOthers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := LoadOrCreateKey(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, DevKeyFile)
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadOrCreateKey(dir); domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(domain.ErrorMessage(err), "chmod 600") {
			t.Fatalf("key of mode %o: %v, want EINVALID saying how to fix it", mode, err)
		}
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(dir); err != nil {
		t.Fatalf("private key again: %v", err)
	}
}

func TestMint(t *testing.T) {
	t.Parallel()
	key, err := LoadOrCreateKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(Config{HS256Secret: key, Issuer: "sless-dev"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	tok, err := Mint(key, "alice", 24*time.Hour, map[string]any{"iss": "sless-dev", "sless_admin": true, "sub": "mallory", "exp": 1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if p.Subject != "alice" || p.Namespace != Namespace("alice") || !p.Admin {
		t.Fatalf("principal = %+v (extra must not override sub)", p)
	}
	if d := time.Until(p.ExpiresAt); d < 23*time.Hour || d > 24*time.Hour {
		t.Fatalf("expires in %v, want about 24h", d)
	}

	// A token minted with another key is refused.
	otherKey, _ := LoadOrCreateKey(t.TempDir())
	forged, err := Mint(otherKey, "alice", time.Hour, map[string]any{"iss": "sless-dev"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(ctx, forged)
	requireUnauthorized(t, err, "token signature is invalid")

	for name, call := range map[string]func() (string, error){
		"empty sub":    func() (string, error) { return Mint(key, "", time.Hour, nil) },
		"zero ttl":     func() (string, error) { return Mint(key, "alice", 0, nil) },
		"short secret": func() (string, error) { return Mint([]byte("short"), "alice", time.Hour, nil) },
	} {
		if _, err := call(); err == nil {
			t.Errorf("%s: minted", name)
		} else {
			testutil.RequireCode(t, err, "INVALID")
		}
	}
}
