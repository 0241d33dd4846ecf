package faults

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/client"
)

// tenant is a user of the platform: a token, its namespace and a client of
// one control plane's API.
type tenant struct {
	t     *testing.T
	sub   string
	ns    string
	token string
}

// newTenant mints a token for sub and ensures its namespace through p.
func newTenant(t *testing.T, p *plane, sub string) *tenant {
	t.Helper()
	tok, err := auth.Mint([]byte(jwtSecret), sub, 2*time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	tn := &tenant{t: t, sub: sub, ns: auth.Namespace(sub), token: tok}
	if _, err := tn.api(p).EnsureNamespace(context.Background()); err != nil {
		t.Fatalf("ensure namespace: %v", err)
	}
	return tn
}

// api is the tenant's client of p.
func (tn *tenant) api(p *plane) *client.Client {
	tn.t.Helper()
	c, err := client.New(p.base(), tn.token, client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
	if err != nil {
		tn.t.Fatal(err)
	}
	return c
}

// fnURL is the public URL of function fn on p.
func (tn *tenant) fnURL(p *plane, fn string) string { return p.base() + "/fn/" + tn.ns + "/" + fn }

// functionsURL is the API's function collection on p.
func (tn *tenant) functionsURL(p *plane) string {
	return p.base() + "/v1/namespaces/" + tn.ns + "/functions"
}

// create creates function fn (Python) with an http trigger when http is
// set. It runs one instance taking every request at once, as the
// scenarios' handlers count what they saw in the process.
func (tn *tenant) create(p *plane, fn string, retrySafe, http bool) {
	tn.t.Helper()
	ctx := context.Background()
	c := tn.api(p)
	if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: fn, Runtime: "python3.11", RetrySafe: retrySafe, TimeoutSec: 60,
		MaxInstances: 1, Concurrency: domain.MaxInstanceConcurrency}); err != nil {
		tn.t.Fatalf("create %s: %v", fn, err)
	}
	if http {
		if _, err := c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: fn + "-http", Type: domain.TriggerHTTP, Function: fn}); err != nil {
			tn.t.Fatalf("http trigger of %s: %v", fn, err)
		}
	}
}

// upload sends handler.py as fn's code and returns the version it made.
func (tn *tenant) upload(p *plane, fn, handler string) int {
	tn.t.Helper()
	res, err := tn.api(p).Upload(context.Background(), fn, zipOf(tn.t, handler))
	if err != nil {
		tn.t.Fatalf("upload %s: %v", fn, err)
	}
	return res.Version.Version
}

// waitServing waits until version v of fn serves.
func (tn *tenant) waitServing(p *plane, fn string, v int, limit time.Duration) {
	tn.t.Helper()
	if err := tn.serving(p, fn, v, limit); err != nil {
		tn.t.Fatalf("wait for %s v%d: %v", fn, v, err)
	}
}

// serving waits until version v of fn serves, and says why not.
func (tn *tenant) serving(p *plane, fn string, v int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	_, err := tn.api(p).WaitServing(ctx, fn, v, 100*time.Millisecond, nil)
	return err
}

// deploy creates fn with handler as its code and waits until it serves.
func (tn *tenant) deploy(p *plane, fn, handler string, retrySafe, http bool) {
	tn.t.Helper()
	tn.create(p, fn, retrySafe, http)
	tn.waitServing(p, fn, tn.upload(p, fn, handler), 90*time.Second)
}

// get answers GET url: status and body ("" and the error on a transport error).
func get(c *http.Client, url string) (int, string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// zipOf is a zip holding handler.py.
func zipOf(t *testing.T, handler string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	f, err := zw.Create("handler.py")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, handler); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// echoHandler answers {"v": version}.
func echoHandler(version int) string {
	return fmt.Sprintf("def handle(event):\n    return {\"v\": %d}\n", version)
}

// sleepHandler sleeps event["sleep"] seconds and answers {"slept": n}.
const sleepHandler = `import time


def handle(event):
    n = event.get("sleep", 0)
    print("sleeping", n)
    time.sleep(n)
    return {"slept": n}
`

// slowImportHandler takes secs seconds to import: its build (which imports
// the entrypoint) and every cold start take that long.
func slowImportHandler(secs, version int) string {
	return fmt.Sprintf("import time\n\ntime.sleep(%d)\n\n\ndef handle(event):\n    return {\"v\": %d}\n", secs, version)
}

// versionOf reads {"v": n} from a function's answer; -1 when it is not one.
func versionOf(body string) int {
	var out struct{ V *int }
	if json.Unmarshal([]byte(body), &out) != nil || out.V == nil {
		return -1
	}
	return *out.V
}

// hostPath reports whether s shows a path of the machine's file system.
func hostPath(s string) bool {
	for _, p := range []string{"/tmp/", "/var/", "/root/", "/home/", "/work/", "/usr/", "sless-faults"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// httpClient is a client for single requests of the checks.
func httpClient() *http.Client { return &http.Client{Timeout: 30 * time.Second} }
