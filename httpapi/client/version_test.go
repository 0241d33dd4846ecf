package client_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// testUploadSourceVersionsRollback: uploads make versions (or not, for the
// same code), source reads the active or a given version, and rollback
// activates a built version; builds are recorded as the worker records them.
func testUploadSourceVersionsRollback(t *testing.T, f *fixture) {
	ctx := context.Background()
	c, _ := f.tenant(t)
	ns := c.Namespace()
	if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "app", Runtime: "python3.11"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Source(ctx, "app", 0)
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")

	v1files := map[string]string{"handler.py": "def handle(event):\n    return 1\n", "blob.bin": "\x00\x01\xff"}
	up, err := c.Upload(ctx, "app", ziptest.Files(t, v1files))
	if err != nil {
		t.Fatal(err)
	}
	if !up.Queued || up.Version.Version != 1 || up.BuildStatus != domain.BuildStatusQueued || up.Digest == "" || up.Config.Runtime != "python3.11" {
		t.Fatalf("first upload %+v", up)
	}
	same, err := c.Upload(ctx, "app", ziptest.Files(t, v1files))
	if err != nil {
		t.Fatal(err)
	}
	if same.Queued || same.Version.Version != 1 || same.Digest != up.Digest {
		t.Fatalf("the same code again: %+v", same)
	}
	_, err = c.Upload(ctx, "app", []byte("not a zip"))
	if e := wantError(t, err, http.StatusBadRequest, client.CodeInvalid, ""); !strings.Contains(e.Message, "zip") {
		t.Fatalf("a bad zip: %q does not say so", e.Message)
	}
	_, err = c.Upload(ctx, "absent", ziptest.Files(t, v1files))
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")

	src, err := c.Source(ctx, "app", 0)
	if err != nil {
		t.Fatal(err)
	}
	if src.Version != 1 || len(src.Files) != 2 {
		t.Fatalf("source %+v", src)
	}
	for _, file := range src.Files {
		content, err := file.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if string(content) != v1files[file.Name] || file.Binary != (file.Name == "blob.bin") {
			t.Fatalf("file %+v: content %q, want %q", file, content, v1files[file.Name])
		}
	}

	f.build(t, ns, "app", 1, "")
	v2files := map[string]string{"handler.py": "def handle(event):\n    return 2\n"}
	if up, err := c.Upload(ctx, "app", ziptest.Files(t, v2files)); err != nil || up.Version.Version != 2 || !up.Queued {
		t.Fatalf("second upload: %+v, %v", up, err)
	}
	f.build(t, ns, "app", 2, "")
	if up, err := c.Upload(ctx, "app", ziptest.Files(t, map[string]string{"handler.py": "def handle(event):\n    return 3\n"})); err != nil || up.Version.Version != 3 {
		t.Fatalf("third upload: %+v, %v", up, err)
	}

	vl, err := c.ListVersions(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if vl.Function != "app" || vl.ActiveVersion != 2 || len(vl.Versions) != 3 || vl.Versions[0].Version != 3 ||
		vl.Versions[1].BuildStatus != domain.BuildStatusSucceeded || !vl.Versions[1].Active || vl.Versions[1].Image != "image:v2" ||
		vl.Versions[0].BuildLog != nil || len(vl.Activations) != 2 || vl.Activations[0].Version != 2 {
		t.Fatalf("versions %+v", vl)
	}
	v1, err := c.GetVersion(ctx, "app", 1)
	if err != nil {
		t.Fatal(err)
	}
	if v1.Version != 1 || v1.Active || v1.BuiltAt == nil || v1.BuildLog == nil || *v1.BuildLog != "build log of version 1" {
		t.Fatalf("version 1: %+v", v1)
	}
	_, err = c.GetVersion(ctx, "app", 9)
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")

	old, err := c.Source(ctx, "app", 1)
	if err != nil {
		t.Fatal(err)
	}
	active, err := c.Source(ctx, "app", 0)
	if err != nil {
		t.Fatal(err)
	}
	if old.Version != 1 || len(old.Files) != 2 || active.Version != 2 || len(active.Files) != 1 || active.Files[0].Content != v2files["handler.py"] {
		t.Fatalf("source of version 1 %+v, of the active one %+v", old, active)
	}

	rb, err := c.Rollback(ctx, "app", 1)
	if err != nil {
		t.Fatal(err)
	}
	if rb.ActiveVersion != 1 || rb.BuildRequeued || rb.Name != "app" {
		t.Fatalf("rollback %+v", rb)
	}
	_, err = c.Rollback(ctx, "app", 3)
	wantError(t, err, http.StatusUnprocessableEntity, client.CodeUnprocessable, "")
	if !client.IsUnprocessable(err) {
		t.Fatalf("IsUnprocessable(%v) is false", err)
	}
	_, err = c.Rollback(ctx, "app", 0)
	wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "version")
	_, err = c.Rollback(ctx, "app", 42)
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
}
