package httpapi_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/slessio/sless/httpapi/apitest"
)

// TestSourceRefusesCodeChangedInTheStore: another tenant holding the object
// store's credentials overwrites a version's source.zip with its own (valid)
// code; GET .../source answers 422 and never shows the stranger's files,
// while an untouched version of the same function is still shown.
func TestSourceRefusesCodeChangedInTheStore(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("victim")
	c.upload("victim", handlerZip(t, `"mine"`)).want(202)
	c.upload("victim", handlerZip(t, `"mine, version 2"`)).want(202)
	v1, err := f.store.GetVersion(context.Background(), c.ns, "victim", 1)
	if err != nil {
		t.Fatal(err)
	}

	stranger := handlerZip(t, `"the stranger's code"`)
	mc, err := minio.New(f.s3.Endpoint(), &minio.Options{Creds: credentials.NewStaticV4(apitest.S3AccessKey, apitest.S3SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mc.PutObject(context.Background(), "sless-code", v1.ZipKey, bytes.NewReader(stranger), int64(len(stranger)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("overwrite %s: %v", v1.ZipKey, err)
	}

	r := c.do("GET", c.p("/functions/victim/source?version=1"), nil)
	r.wantError(422, "UNPROCESSABLE", "", "does not match the digest recorded at upload ("+v1.Digest+")",
		"changed in the object store after the upload")
	if bytes.Contains(r.body, []byte("stranger")) {
		t.Fatalf("the answer shows the stranger's code: %s", r.body)
	}

	var files []struct{ Name, Content string }
	c.do("GET", c.p("/functions/victim/source?version=2"), nil).want(200).decode(&files)
	if len(files) != 1 || !strings.Contains(files[0].Content, "mine, version 2") {
		t.Fatalf("version 2 files %+v; want the uploaded code", files)
	}
}
