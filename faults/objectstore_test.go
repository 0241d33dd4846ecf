package faults

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
)

// TestObjectStoreDown: the S3 endpoint stops while an upload is on its way;
// the upload fails clearly and stores nothing, and the same zip uploaded once
// S3 is back builds and serves.
func TestObjectStoreDown(t *testing.T) {
	t.Parallel()
	const scenario = "S3 down"
	w := newWorld(t)
	p := w.newPlane("a")
	p.start()
	tn := newTenant(t, p, "s3down")
	tn.deploy(p, "echo", echoHandler(1), false, true)
	versions := func() int {
		return w.count(`SELECT count(*) FROM function_versions WHERE namespace = $1 AND function = $2`, tn.ns, "echo")
	}
	before := versions()

	// Half of the upload's body is sent, then S3 stops, then the rest.
	code := zipOf(t, echoHandler(2)+"# "+strings.Repeat("padding ", 64<<10)+"\n")
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("code", "echo.zip")
	_, _ = fw.Write(code)
	_ = mw.Close()
	whole := body.Bytes()
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(whole[:len(whole)/2])
		time.Sleep(300 * time.Millisecond)
		w.stopS3()
		_, _ = pw.Write(whole[len(whole)/2:])
		_ = pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, tn.functionsURL(p)+"/echo/upload", pr)
	req.Header.Set("Authorization", "Bearer "+tn.token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	status, _, answer, err := do(&http.Client{Timeout: 60 * time.Second}, req)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	var e struct {
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal([]byte(answer), &e)
	promise(t, scenario, "an upload while S3 is down: 503 EUNAVAILABLE, a readable message, no host path",
		status == 503 && e.Error.Code == domain.EUNAVAILABLE && len(e.Error.Message) > 10 && !hostPath(answer),
		"%d %s %q", status, e.Error.Code, e.Error.Message)
	after := versions()
	fnStatus, fnBody, _ := get(&http.Client{Timeout: 10 * time.Second}, tn.fnURL(p, "echo"))
	promise(t, scenario, "nothing half-stored: no version for the failed upload, v1 serves on", after == before && fnStatus == 200 && versionOf(fnBody) == 1,
		"%d versions before, %d after; /fn %d %s", before, after, fnStatus, strings.TrimSpace(fnBody))

	w.startS3()
	back := time.Now()
	res, err := tn.api(p).Upload(t.Context(), "echo", code)
	if err != nil {
		promise(t, scenario, "the same zip once S3 is back: built and serving", false, "upload: %v", err)
		return
	}
	tn.waitServing(p, "echo", res.Version.Version, 60*time.Second)
	// The proxy learns the rollout from a notification: a moment after the API.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		fnStatus, fnBody, _ = get(&http.Client{Timeout: 10 * time.Second}, tn.fnURL(p, "echo"))
		if versionOf(fnBody) == 2 || time.Now().After(deadline) {
			break
		}
	}
	promise(t, scenario, "the same zip once S3 is back: built and serving", res.Queued && fnStatus == 200 && versionOf(fnBody) == 2,
		"version %d serving %s after S3's return; /fn %d %s", res.Version.Version, secs(time.Since(back)), fnStatus, strings.TrimSpace(fnBody))
}
