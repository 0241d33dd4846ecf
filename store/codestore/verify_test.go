package codestore_test

import (
	"bytes"
	"path"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store/codestore"
)

// overwrite replaces the object at key behind the Store's back, as a tenant
// holding the object store's credentials can: a plain PUT with them.
func (f fixture) overwrite(t *testing.T, key string, data []byte) {
	t.Helper()
	mc, err := minio.New(f.srv.Endpoint(), &minio.Options{Creds: credentials.NewStaticV4(access, secret, "")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mc.PutObject(t.Context(), f.cfg.Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("overwrite %s: %v", key, err)
	}
}

func TestGetVerifiedReturnsTheUploadedCode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	z := mustZip(t, t0, file("handler.py", "def handle(e):\n    return 'mine'\n"))
	obj := f.mustPut(t, "fn", z)

	data, files, err := f.store.GetVerified(t.Context(), obj.ZipKey, obj.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, z) || len(files) != 1 || files[0].Name != "handler.py" || codestore.Digest(files) != obj.Digest {
		t.Fatalf("GetVerified = %d bytes, files %+v; want the uploaded zip and its files", len(data), files)
	}
	ctxData, err := f.store.GetVerifiedContext(t.Context(), obj.ContextKey)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := codestore.BuildContext(files, baseImage); !bytes.Equal(ctxData, want) {
		t.Fatal("GetVerifiedContext differs from the stored build context")
	}

	_, _, err = f.store.GetVerified(t.Context(), "code/"+ns+"/nope/0/source.zip", obj.Digest)
	testutil.RequireCode(t, err, domain.ENOTFOUND)
	_, err = f.store.GetVerifiedContext(t.Context(), "code/"+ns+"/nope/0/context-0000000000000000.tar.gz")
	testutil.RequireCode(t, err, domain.ENOTFOUND)
}

// TestCodeChangedInTheStoreIsNeverServed: another tenant with the store's
// credentials overwrites a version's zip (with other valid code, or with
// anything) and its build context; every read that serves them refuses, and
// uploading the same code again repairs them.
func TestCodeChangedInTheStoreIsNeverServed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	mine := mustZip(t, t0, file("handler.py", "def handle(e):\n    return 'mine'\n"))
	obj := f.mustPut(t, "victim", mine)
	theirs := mustZip(t, t0, file("handler.py", "import os\ndef handle(e):\n    return dict(os.environ)\n"))
	theirObj := f.mustPut(t, "other", theirs)

	changed := []string{"does not match the digest recorded at upload (" + obj.Digest + ")", "changed in the object store after the upload", "upload the code again"}
	for name, data := range map[string][]byte{"other valid code": theirs, "no zip at all": []byte("not a zip"), "nothing": {}} {
		t.Run(name, func(t *testing.T) {
			f.overwrite(t, obj.ZipKey, data)
			data, files, err := f.store.GetVerified(t.Context(), obj.ZipKey, obj.Digest)
			testutil.RequireCode(t, err, domain.EUNPROCESSABLE, changed...)
			if data != nil || files != nil {
				t.Fatalf("a refused read returned %d bytes and %d files", len(data), len(files))
			}
			// The console's path (the digest the key names) refuses too.
			_, err = f.store.Source(t.Context(), obj.ZipKey)
			testutil.RequireCode(t, err, domain.EUNPROCESSABLE, changed...)
		})
	}

	// The context: the other code's context under the victim's key.
	f.overwrite(t, obj.ContextKey, f.mustRead(t, theirObj.ContextKey))
	_, err := f.store.GetVerifiedContext(t.Context(), obj.ContextKey)
	testutil.RequireCode(t, err, domain.EUNPROCESSABLE, "build context", path.Base(obj.ContextKey), "changed in the object store after the upload")

	// Uploading the same code again replaces both (the keys did not change).
	if again := f.mustPut(t, "victim", mine); again != obj {
		t.Fatalf("re-upload stored %+v, want %+v", again, obj)
	}
	if data, _, err := f.store.GetVerified(t.Context(), obj.ZipKey, obj.Digest); err != nil || !bytes.Equal(data, mine) {
		t.Fatalf("after a re-upload: %d bytes, %v; want the uploaded zip", len(data), err)
	}
	if _, err := f.store.GetVerifiedContext(t.Context(), obj.ContextKey); err != nil {
		t.Fatalf("context after a re-upload: %v", err)
	}
}
