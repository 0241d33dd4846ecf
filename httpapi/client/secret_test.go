package client_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// testSecrets: set (text as value, other bytes as value_base64), get, list
// and delete; functions use secrets as env vars and files, a set rolls them
// to a new version, a secret in use cannot be deleted (409 naming the
// function), a missing one is 422; no answer ever holds a value.
func testSecrets(t *testing.T, f *fixture) {
	ctx := context.Background()
	tenant, sub := f.tenant(t)
	tap := &wiretap{next: f.calls}
	c, err := client.New(f.url, mint(t, testSecret, sub), client.WithHTTPClient(&http.Client{Transport: tap}))
	if err != nil {
		t.Fatal(err)
	}
	const text = "hunter2-pa55word"
	binary := []byte{0xff, 0xfe, 0x00, 'k', 0x80}

	s, err := c.SetSecret(ctx, "db", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "db" || s.Namespace != tenant.Namespace() || s.Version != 1 || s.CreatedAt.IsZero() || len(s.UsedBy) != 0 || len(s.Rolled) != 0 {
		t.Fatalf("first set %+v", s)
	}
	if body := tap.lastRequest(); !slices.Equal(slices.Sorted(maps.Keys(body)), []string{"value"}) || body["value"] != text {
		t.Fatalf("a text value is sent as %v, want {\"value\": %q}", body, text)
	}
	s, err = c.SetSecret(ctx, "db", binary)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != 2 {
		t.Fatalf("second set %+v, want version 2", s)
	}
	body := tap.lastRequest()
	if got, err := base64.StdEncoding.DecodeString(body["value_base64"]); err != nil || !bytes.Equal(got, binary) || len(body) != 1 {
		t.Fatalf("bytes that are not UTF-8 are sent as %v (%v), want only value_base64 of %x", body, err, binary)
	}
	_, err = c.SetSecret(ctx, "Not_A_Label", []byte("x")) // no secret's path
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
	if s, err := c.SetSecret(ctx, "largest", bytes.Repeat([]byte{0xff}, 64<<10)); err != nil || s.Version != 1 {
		t.Fatalf("a binary value of 64 KiB: %+v (%v)", s, err)
	}
	_, err = c.SetSecret(ctx, "huge", bytes.Repeat([]byte("x"), 64<<10+1))
	wantError(t, err, http.StatusRequestEntityTooLarge, client.CodeTooLarge, "value")
	if err := c.DeleteSecret(ctx, "largest"); err != nil {
		t.Fatal(err)
	}

	// A function uses it as an env var and as a file; a plain env var
	// named like a credential is warned about.
	_, err = c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "app", Runtime: "python3.11", Secrets: map[string]string{"DB_PASSWORD": "absent"}})
	wantError(t, err, http.StatusUnprocessableEntity, client.CodeUnprocessable, "secrets")
	fn, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "app", Runtime: "python3.11",
		EnvVars: map[string]string{"API_TOKEN": "plain"}, Secrets: map[string]string{"DB_PASSWORD": "db"}, SecretFiles: []string{"db"}})
	if err != nil {
		t.Fatal(err)
	}
	if fn.Secrets["DB_PASSWORD"] != "db" || !slices.Equal(fn.SecretFiles, []string{"db"}) || fn.SecretVersions["db"] != 2 ||
		len(fn.Warnings) != 1 || !strings.Contains(fn.Warnings[0], "API_TOKEN") {
		t.Fatalf("created %+v", fn)
	}
	if _, err := c.Upload(ctx, "app", ziptest.Files(t, map[string]string{"handler.py": "def handle(event):\n    return 1\n"})); err != nil {
		t.Fatal(err)
	}
	f.build(t, c.Namespace(), "app", 1, "")

	got, err := c.GetSecret(ctx, "db")
	if err != nil || got.Version != 2 || !slices.Equal(got.UsedBy, []string{"app"}) {
		t.Fatalf("get = %+v (%v), want version 2 used by app", got, err)
	}
	s, err = c.SetSecret(ctx, "db", []byte(text+"-rotated"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != 3 || !slices.Equal(s.Rolled, []client.RolledFunction{{Function: "app", Version: 2}}) {
		t.Fatalf("a set of a used secret = %+v, want version 3 rolling app to version 2", s)
	}
	if fn, err = c.GetFunction(ctx, "app"); err != nil || fn.SecretVersions["db"] != 3 {
		t.Fatalf("after the set the function runs %+v (%v), want secret version 3", fn, err)
	}
	if _, err := c.SetSecret(ctx, "other", []byte("o")); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListSecrets(ctx)
	slices.SortFunc(list, func(a, b client.Secret) int { return strings.Compare(a.Name, b.Name) })
	if err != nil || len(list) != 2 || list[0].Name != "db" || list[0].Version != 3 || list[1].Name != "other" || len(list[1].UsedBy) != 0 {
		t.Fatalf("listed %+v (%v)", list, err)
	}

	err = c.DeleteSecret(ctx, "db")
	if e := wantError(t, err, http.StatusConflict, client.CodeConflict, ""); !strings.Contains(e.Message, "app") {
		t.Fatalf("deleting a used secret: %q does not name the function", e.Message)
	}
	if _, err := c.UpdateFunction(ctx, "app", client.UpdateFunctionRequest{Secrets: client.Ptr(map[string]string{}), SecretFiles: client.Ptr([]string{})}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSecret(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetSecret(ctx, "db")
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
	wantError(t, c.DeleteSecret(ctx, "db"), http.StatusNotFound, client.CodeNotFound, "")

	if tap.answered(text) {
		t.Fatalf("an answer of the API holds the secret's value %q", text)
	}
}

// wiretap is a transport that keeps the JSON body of the last request and
// every answer's body.
type wiretap struct {
	next    http.RoundTripper
	mu      sync.Mutex
	request map[string]string
	answers bytes.Buffer
}

func (w *wiretap) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		data, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(data))
		var body map[string]string
		_ = json.Unmarshal(data, &body)
		w.mu.Lock()
		w.request = body
		w.mu.Unlock()
	}
	res, err := w.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(data))
	w.mu.Lock()
	w.answers.Write(data)
	w.mu.Unlock()
	return res, nil
}

// lastRequest returns the JSON body of the last request with one.
func (w *wiretap) lastRequest() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.request
}

// answered reports whether an answer's body held s.
func (w *wiretap) answered(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Contains(w.answers.Bytes(), []byte(s))
}
