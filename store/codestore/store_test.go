package codestore_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/s3embed"
)

const (
	ns        = "sless-ffd1f598c169b0ae"
	baseImage = "sless/python:3.11"
	access    = "codestore-test"
	secret    = "codestore-test-secret"
)

type fixture struct {
	srv   *s3embed.Server
	store *codestore.Store
	cfg   codestore.Config
}

// setup starts an embedded S3 server (with credentials and no bucket) and a
// Store on it, which must create its bucket.
func setup(t *testing.T) fixture {
	t.Helper()
	srv, err := s3embed.Start(t.Context(), s3embed.Options{Dir: t.TempDir(), AccessKey: access, SecretKey: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := codestore.Config{Endpoint: srv.URL(), AccessKey: access, SecretKey: secret, Bucket: "sless-code"}
	st, err := codestore.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{srv: srv, store: st, cfg: cfg}
}

// mustPut validates z and stores it for incarnation 1 of function fn.
func (f fixture) mustPut(t *testing.T, fn string, z []byte) codestore.Object {
	t.Helper()
	return f.mustPutIn(t, fn, 1, z)
}

// mustPutIn validates z and stores it for one incarnation of function fn.
func (f fixture) mustPutIn(t *testing.T, fn string, incarnation int, z []byte) codestore.Object {
	t.Helper()
	files, err := codestore.ValidateZip(z, codestore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := f.store.Put(t.Context(), ns, fn, incarnation, z, files, baseImage)
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	return obj
}

func (f fixture) mustRead(t *testing.T, key string) []byte {
	t.Helper()
	rc, err := f.store.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPutStoresZipAndContextUnderDigestKeys(t *testing.T) {
	t.Parallel()
	f := setup(t)
	z := mustZip(t, t0, file("handler.py", "def handle(e):\n    return e\n"))
	obj := f.mustPut(t, "hello", z)

	files, _ := codestore.ValidateZip(z, codestore.Limits{})
	digest := codestore.Digest(files)
	hexPart := strings.TrimPrefix(digest, "sha256:")
	if obj.Digest != digest {
		t.Errorf("Digest = %s, want %s", obj.Digest, digest)
	}
	if want := "code/" + ns + "/hello/i1/" + hexPart + "/source.zip"; obj.ZipKey != want {
		t.Errorf("ZipKey = %s, want %s", obj.ZipKey, want)
	}
	if !strings.HasPrefix(obj.ContextKey, "code/"+ns+"/hello/i1/"+hexPart+"/context-") || !strings.HasSuffix(obj.ContextKey, ".tar.gz") {
		t.Errorf("ContextKey = %s", obj.ContextKey)
	}
	if got := f.mustRead(t, obj.ZipKey); !bytes.Equal(got, z) {
		t.Error("stored zip differs from the upload")
	}
	wantCtx, _ := codestore.BuildContext(files, baseImage)
	if got := f.mustRead(t, obj.ContextKey); !bytes.Equal(got, wantCtx) {
		t.Error("stored context differs from BuildContext")
	}

	// The same code zipped again (other timestamps): same keys, nothing
	// uploaded, so the first zip's bytes stay.
	again := mustZip(t, t0.Add(48*time.Hour), entry{name: "handler.py", data: "def handle(e):\n    return e\n", method: zip.Deflate})
	if bytes.Equal(again, z) {
		t.Fatal("re-zipped code has identical bytes")
	}
	if obj2 := f.mustPut(t, "hello", again); obj2 != obj {
		t.Errorf("same code stored twice: %+v then %+v", obj, obj2)
	}
	if got := f.mustRead(t, obj.ZipKey); !bytes.Equal(got, z) {
		t.Error("an identical re-upload replaced the stored zip")
	}

	// The same code for another runtime gets its own context next to it.
	obj3, err := f.store.Put(t.Context(), ns, "hello", 1, z, files, "sless/python:3.12")
	if err != nil {
		t.Fatal(err)
	}
	if obj3.ZipKey != obj.ZipKey || obj3.ContextKey == obj.ContextKey {
		t.Errorf("other base image: %+v vs %+v", obj3, obj)
	}
}

func TestPutRoundTrips20MiB(t *testing.T) {
	t.Parallel()
	f := setup(t)
	big := make([]byte, 20<<20)
	_, _ = rand.Read(big)
	z := mustZip(t, t0, entry{name: "model.bin", data: string(big), method: zip.Store})
	obj := f.mustPut(t, "big", z)
	if got := f.mustRead(t, obj.ZipKey); !bytes.Equal(got, z) {
		t.Fatalf("20 MiB zip came back as %d bytes, want %d identical", len(got), len(z))
	}
	src, err := f.store.Source(t.Context(), obj.ZipKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(src) != 1 || !src[0].Binary {
		t.Fatalf("source = %d files", len(src))
	}
	if data, _ := base64.StdEncoding.DecodeString(src[0].Content); !bytes.Equal(data, big) {
		t.Fatal("20 MiB file differs in the source listing")
	}
}

func TestSourceListsTextAndBinaryFiles(t *testing.T) {
	t.Parallel()
	f := setup(t)
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	z := mustZip(t, t0,
		file("handler.py", "print('héllo')\n"),
		file("img/logo.png", png),
		file("latin1.txt", "caf\xe9"),
		file("nul.txt", "a\x00b"),
		file("empty", ""),
	)
	obj := f.mustPut(t, "src", z)
	got, err := f.store.Source(t.Context(), obj.ZipKey)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	want := []codestore.SourceFile{
		{Name: "empty", Content: ""},
		{Name: "handler.py", Content: "print('héllo')\n"},
		{Name: "img/logo.png", Content: b64([]byte(png)), Binary: true},
		{Name: "latin1.txt", Content: b64([]byte("caf\xe9")), Binary: true},
		{Name: "nul.txt", Content: b64([]byte("a\x00b")), Binary: true},
	}
	if len(got) != len(want) {
		t.Fatalf("source = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("file %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestMissingKeysAreNotFound(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.store.Get(t.Context(), "code/"+ns+"/nope/0/source.zip")
	testutil.RequireCode(t, err, domain.ENOTFOUND)
	_, err = f.store.Source(t.Context(), "code/"+ns+"/nope/0/source.zip")
	testutil.RequireCode(t, err, domain.ENOTFOUND)
}

func TestDeleteRemovesOneFunction(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := f.mustPut(t, "fn", mustZip(t, t0, file("a.py", "1")))
	f.mustPut(t, "fn", mustZip(t, t0, file("a.py", "2")))
	b := f.mustPut(t, "fn2", mustZip(t, t0, file("a.py", "1")))

	testutil.RequireCode(t, f.store.Delete(t.Context(), "code/"+ns+"/fn"), domain.EINVALID)
	testutil.RequireCode(t, f.store.Delete(t.Context(), ""), domain.EINVALID)
	if err := f.store.Delete(t.Context(), codestore.FunctionPrefix(ns, "fn")); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{a.ZipKey, a.ContextKey} {
		_, err := f.store.Get(t.Context(), key)
		testutil.RequireCode(t, err, domain.ENOTFOUND)
	}
	for _, key := range []string{b.ZipKey, b.ContextKey} {
		if _, err := f.store.Get(t.Context(), key); err != nil {
			t.Errorf("%s of the other function: %v", key, err)
		}
	}
	if err := f.store.Delete(t.Context(), codestore.FunctionPrefix(ns, "fn")); err != nil {
		t.Errorf("deleting nothing: %v", err)
	}
}

// TestDeleteCodeRemovesOneIncarnation: a function deleted and created again
// stores the same code under other keys, and the cleanup of the deleted
// incarnation leaves the new one's code alone. A cleanup that names no
// incarnation (queued by an older server) removes only the code stored
// before keys named incarnations: the digest directories directly under
// the function's prefix.
func TestDeleteCodeRemovesOneIncarnation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	z := mustZip(t, t0, file("a.py", "1"))
	first := f.mustPutIn(t, "fn", 1, z)
	second := f.mustPutIn(t, "fn", 2, z)
	if first.Digest != second.Digest || first.ZipKey == second.ZipKey || first.ContextKey == second.ContextKey {
		t.Fatalf("the same code of two incarnations: %+v and %+v; want one digest, other keys", first, second)
	}
	other := f.mustPutIn(t, "fn2", 1, z)
	hexPart := strings.TrimPrefix(first.Digest, "sha256:")
	legacy := []string{ // as Put stored code before keys named incarnations
		codestore.FunctionPrefix(ns, "fn") + hexPart + "/source.zip",
		codestore.FunctionPrefix(ns, "fn") + hexPart + "/context-0123456789abcdef.tar.gz",
	}
	notLegacy := []string{ // neither a digest directory nor an incarnation's
		codestore.FunctionPrefix(ns, "fn") + "notes.txt",
		codestore.FunctionPrefix(ns, "fn") + strings.ToUpper(hexPart) + "/source.zip",
		codestore.FunctionPrefix(ns, "fn") + hexPart[:63] + "/source.zip",
	}
	for _, key := range append(append([]string(nil), legacy...), notLegacy...) {
		f.overwrite(t, key, z)
	}
	gone := func(keys ...string) {
		t.Helper()
		for _, key := range keys {
			_, err := f.store.Get(t.Context(), key)
			testutil.RequireCode(t, err, domain.ENOTFOUND)
		}
	}
	kept := func(keys ...string) {
		t.Helper()
		for _, key := range keys {
			rc, err := f.store.Get(t.Context(), key)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			rc.Close()
		}
	}

	if err := f.store.DeleteCode(t.Context(), ns, "fn", 1); err != nil {
		t.Fatal(err)
	}
	gone(first.ZipKey, first.ContextKey)
	kept(second.ZipKey, second.ContextKey, other.ZipKey, other.ContextKey)
	kept(legacy...)

	if err := f.store.DeleteCode(t.Context(), ns, "fn", 0); err != nil {
		t.Fatal(err)
	}
	gone(legacy...)
	kept(second.ZipKey, second.ContextKey, other.ZipKey, other.ContextKey)
	kept(notLegacy...)

	testutil.RequireCode(t, f.store.DeleteCode(t.Context(), ns, "fn", -1), domain.EINVALID)
	if err := f.store.DeleteCode(t.Context(), ns, "fn", 7); err != nil {
		t.Errorf("deleting nothing: %v", err)
	}
}

func TestPutRefusesBadNames(t *testing.T) {
	t.Parallel()
	f := setup(t)
	z := mustZip(t, t0, file("a.py", "1"))
	files, _ := codestore.ValidateZip(z, codestore.Limits{})
	for _, tc := range []struct {
		ns, fn      string
		incarnation int
		img         string
	}{
		{"../etc", "fn", 1, baseImage},
		{ns, "Fn/..", 1, baseImage},
		{ns, "fn", 1, "img\nRUN x"},
		{ns, "fn", 0, baseImage}, // keys name a created function's incarnation
		{ns, "fn", -1, baseImage},
	} {
		_, err := f.store.Put(t.Context(), tc.ns, tc.fn, tc.incarnation, z, files, tc.img)
		testutil.RequireCode(t, err, domain.EINVALID)
	}
}

func TestPingAndUnavailableStore(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if err := f.store.Ping(t.Context()); err != nil {
		t.Fatalf("ping: %v", err)
	}

	// Another store whose credentials the server rejects.
	bad := f.cfg
	bad.SecretKey = "wrong"
	_, err := codestore.New(t.Context(), bad)
	testutil.RequireCode(t, err, domain.EUNAVAILABLE, "credentials")

	if err := f.srv.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testutil.RequireCode(t, f.store.Ping(t.Context()), domain.EUNAVAILABLE)
	t.Logf("ping of a stopped store answered in %v", time.Since(start))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("ping of a stopped store took %v", d)
	}
	// Data calls retry (minio-go's default); a caller's deadline ends them.
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err = f.store.Get(ctx, "code/x")
	testutil.RequireCode(t, err, domain.EUNAVAILABLE)
}

func TestNewChecksConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []codestore.Config{
		{Endpoint: "", Bucket: "b"},
		{Endpoint: "127.0.0.1:9", Bucket: ""},
		{Endpoint: "ftp://127.0.0.1:9", Bucket: "b"},
		{Endpoint: "http://127.0.0.1:9/some/path", Bucket: "b"},
	} {
		_, err := codestore.New(t.Context(), cfg)
		testutil.RequireCode(t, err, domain.EINVALID)
	}
}
