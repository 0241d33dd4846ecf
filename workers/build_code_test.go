package workers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/s3embed"
	"github.com/slessio/sless/store/codestore/ziptest"
	"github.com/slessio/sless/workers"
)

// overwriter replaces objects behind the code store's back, as a tenant
// holding the object store's credentials can: a plain PUT with them.
func overwriter(t *testing.T, srv *s3embed.Server) func(key string, data []byte) {
	t.Helper()
	mc, err := minio.New(srv.Endpoint(), &minio.Options{Creds: credentials.NewStaticV4("test", "test-secret", "")})
	if err != nil {
		t.Fatal(err)
	}
	return func(key string, data []byte) {
		t.Helper()
		if _, err := mc.PutObject(context.Background(), "sless-code", key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("overwrite %s: %v", key, err)
		}
	}
}

// gotCode is what the driver read through BuildSpec.Code during one build.
type gotCode struct {
	zip, buildCtx []byte
	otherErr      error // reading a key that is not the version's
}

// TestBuildRefusesCodeChangedInTheStore: another tenant holding the object
// store's credentials overwrites a version's source.zip with its own valid
// code, and another version's build context. Those versions fail with a
// message saying so and the driver never builds them; an untouched version
// builds, and its driver reads exactly the checked bytes, even when the
// object changes again while it builds.
func TestBuildRefusesCodeChangedInTheStore(t *testing.T) {
	t.Parallel()
	h := setup(t)
	st, srv := codeStoreOnServer(t)
	overwrite := overwriter(t, srv)
	stranger := ziptest.Files(t, map[string]string{"handler.py": "import os\ndef handle(e):\n    return dict(os.environ)\n"})

	var mu sync.Mutex
	got := map[string]gotCode{}
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onBuild = func(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
			overwrite(b.ZipKey, stranger) // too late: the build has its checked bytes
			read := func(key string) ([]byte, error) {
				rc, err := b.Code.Get(ctx, key)
				if err != nil {
					return nil, err
				}
				defer rc.Close()
				return io.ReadAll(rc)
			}
			var g gotCode
			var err error
			if g.zip, err = read(b.ZipKey); err != nil {
				return driver.BuildResult{}, err
			}
			if g.buildCtx, err = read(b.ContextKey); err != nil {
				return driver.BuildResult{}, err
			}
			_, g.otherErr = read(path.Dir(b.ZipKey) + "/../other/source.zip")
			mu.Lock()
			got[b.Function] = g
			mu.Unlock()
			return driver.BuildResult{Image: "local/" + b.Function}, nil
		}
	})

	code := map[string]domain.Code{}
	for _, name := range []string{"victim", "context-victim", "honest"} {
		h.createFunction(name, pySpec)
		code[name] = putCode(t, st, h.ns, name, 1, map[string]string{"handler.py": "def handle(e):\n    return '" + name + "'\n"}, "sless/python3.11")
	}
	overwrite(code["victim"].ZipKey, stranger)
	otherCtx, err := codestore.BuildContext([]codestore.File{{Name: "handler.py", Mode: 0o644, Data: []byte("print('stranger')\n")}}, "sless/python3.11")
	if err != nil {
		t.Fatal(err)
	}
	overwrite(code["context-victim"].ContextKey, otherCtx)
	for name, c := range code {
		h.uploadCode(name, c)
	}
	h.start(func(c *workers.Config) { c.Code = st })

	h.eventually(15*time.Second, func() error {
		for name, want := range map[string]domain.BuildStatus{"victim": domain.BuildStatusFailed,
			"context-victim": domain.BuildStatusFailed, "honest": domain.BuildStatusSucceeded} {
			if v := h.version(name, 1); v.BuildStatus != want {
				return errorf("%s v1 is %s, want %s", name, v.BuildStatus, want)
			}
		}
		return nil
	})
	for name, parts := range map[string][]string{
		"victim": {"the stored code of this version does not match the digest recorded at upload (" + code["victim"].Digest + ")",
			"it was changed in the object store after the upload; upload the code again"},
		"context-victim": {"the stored build context of this version does not match the hash in its name (" + path.Base(code["context-victim"].ContextKey) + ")",
			"it was changed in the object store after the upload"},
	} {
		v := h.version(name, 1)
		for _, p := range parts {
			if !strings.Contains(v.Message, p) {
				t.Errorf("%s v1 message %q does not say %q", name, v.Message, p)
			}
		}
		// So that the same code uploaded again is built afresh (domain.Function.Upload).
		if !v.StoredCodeChanged() {
			t.Errorf("%s v1 failed with %q, which domain does not take for stored code changed after the upload", name, v.Message)
		}
		if n := h.driver.buildCalls(name, 1); n != 0 {
			t.Errorf("the driver built %s %d times, want never", name, n)
		}
		if n := h.events(domain.FunctionStream(h.ns, name), domain.EventBuildFailed); n != 1 {
			t.Errorf("%d BuildFailed events of %s, want 1", n, name)
		}
		if f := h.function(name); f.ActiveVersion != 0 {
			t.Errorf("%s has active version %d, want none", name, f.ActiveVersion)
		}
	}

	mu.Lock()
	g, ok := got["honest"]
	mu.Unlock()
	if !ok {
		t.Fatal("the driver did not build the untouched version")
	}
	if files, err := codestore.ValidateZip(g.zip, codestore.DefaultLimits()); err != nil || codestore.Digest(files) != code["honest"].Digest {
		t.Errorf("the driver read other code than the uploaded %s (%v)", code["honest"].Digest, err)
	}
	sum := sha256.Sum256(g.buildCtx)
	if want := "context-" + hex.EncodeToString(sum[:8]) + ".tar.gz"; path.Base(code["honest"].ContextKey) != want {
		t.Errorf("the driver read a build context named %s by its bytes, want %s", want, path.Base(code["honest"].ContextKey))
	}
	if domain.ErrorCode(g.otherErr) != domain.ENOTFOUND {
		t.Errorf("reading another key gave %v, want ENOTFOUND", g.otherErr)
	}
}
