package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/secrets"
	"github.com/slessio/sless/store/pgtest"
)

// secretHandler answers the SHA-256 of its secret as env var and as file,
// never the value (which would then sit in the invocation log's answer).
const secretHandler = `import hashlib, json, os


def _h(b):
    return hashlib.sha256(b).hexdigest()


def handle(event):
    with open("/run/secrets/db-password", "rb") as f:
        file = f.read()
    out = {"env": _h(os.environ.get("DB_PASSWORD", "").encode()), "file": _h(file)}
    print(json.dumps(out))  # a job run's result is its last line of output
    return out
`

// TestSecretsNeverLeak sets a secret, runs a function that uses it as env
// and as file (HTTP and a job run), sets a new value (the function gets a
// version with it; a rollback brings the old one back), deletes it, and
// checks that the value appears in no API answer, no row of any table of
// the database (events, read models, River's job args, the invocation
// log), and no line the server logged.
func TestSecretsNeverLeak(t *testing.T) {
	dev := startDev(t)
	dev.waitReady(t)
	c := tenantClient(t, dev, "alice")
	api := &apiCaller{t: t, base: dev.base + "/v1/namespaces/" + c.Namespace(), token: dev.token(t, "alice", false)}
	v1, v2 := marker(t), marker(t)
	var answers bytes.Buffer // every API answer, searched at the end
	api.answers = &answers

	var sec struct {
		Version int      `json:"version"`
		UsedBy  []string `json:"used_by"`
		Rolled  []struct {
			Function string `json:"function"`
			Version  int    `json:"version"`
		} `json:"rolled"`
	}
	api.must("PUT", "/secrets/db-password", map[string]string{"value": v1}, http.StatusCreated, &sec)
	if sec.Version != 1 {
		t.Fatalf("first set: version %d, want 1", sec.Version)
	}
	// A function may not name a secret that does not exist.
	api.must("POST", "/functions", map[string]any{"name": "bad", "runtime": "python3.11", "secrets": map[string]string{"X": "nope"}},
		http.StatusUnprocessableEntity, nil)

	var fn struct {
		Warnings       []string       `json:"warnings"`
		SecretVersions map[string]int `json:"secret_versions"`
		ActiveVersion  int            `json:"active_version"`
		Phase          string         `json:"phase"`
		Message        string         `json:"message"`
	}
	api.must("POST", "/functions", map[string]any{"name": "db", "runtime": "python3.11",
		"env_vars": map[string]string{"API_TOKEN": "not-a-secret-but-named-like-one"},
		"secrets":  map[string]string{"DB_PASSWORD": "db-password"}, "secret_files": []string{"db-password"}}, http.StatusCreated, &fn)
	if len(fn.Warnings) != 1 || !strings.Contains(fn.Warnings[0], "API_TOKEN") {
		t.Errorf("warnings = %q, want one about API_TOKEN", fn.Warnings)
	}
	if fn.SecretVersions["db-password"] != 1 {
		t.Errorf("secret_versions = %v, want db-password: 1", fn.SecretVersions)
	}
	if v := upload(t, c, "db", map[string]string{"handler.py": secretHandler}); waitBuilt(t, c, "db", v).BuildStatus != "Succeeded" {
		t.Fatal("the build failed")
	}
	serve(t, c, "db")
	wantValue := func(value string) { t.Helper(); waitSecretValue(t, dev, c, value) }
	wantValue(v1)

	// A new value makes a new version of the function, which runs it.
	api.must("PUT", "/secrets/db-password", map[string]string{"value_base64": base64.StdEncoding.EncodeToString([]byte(v2))}, http.StatusOK, &sec)
	if sec.Version != 2 || len(sec.Rolled) != 1 || sec.Rolled[0].Function != "db" || sec.Rolled[0].Version != 2 {
		t.Fatalf("second set: %+v, want version 2 rolling db to version 2", sec)
	}
	wantValue(v2)
	// A job run gets it too.
	api.must("POST", "/jobs", map[string]any{"name": "once", "function": "db", "event": map[string]any{}, "run_id": 1}, http.StatusCreated, nil)
	var job struct {
		Phase  string `json:"phase"`
		Result string `json:"message"`
	}
	testutil.WaitFor(t, 2*time.Minute, func() bool {
		api.must("GET", "/jobs/once", nil, http.StatusOK, &job)
		return job.Phase == "Succeeded" || job.Phase == "Failed"
	})
	if !strings.Contains(job.Result, hash(v2)) {
		t.Errorf("job run: %s %q, want the hash of the second value", job.Phase, job.Result)
	}
	// A rollback brings back the value version 1 ran with.
	api.must("POST", "/functions/db/rollback", map[string]int{"version": 1}, http.StatusOK, nil)
	wantValue(v1)

	// In use, it cannot be deleted; once no function uses it, it can.
	api.must("DELETE", "/secrets/db-password", nil, http.StatusConflict, nil)
	api.must("PUT", "/functions/db", map[string]any{"secrets": map[string]string{}, "secret_files": []string{}}, http.StatusOK, nil)
	var list struct {
		Secrets []struct {
			Name   string   `json:"name"`
			UsedBy []string `json:"used_by"`
		} `json:"secrets"`
	}
	api.must("GET", "/secrets", nil, http.StatusOK, &list)
	if len(list.Secrets) != 1 || len(list.Secrets[0].UsedBy) != 0 {
		t.Errorf("secrets after the function stopped using it: %+v", list.Secrets)
	}
	api.must("DELETE", "/secrets/db-password", nil, http.StatusNoContent, nil)
	api.must("GET", "/secrets/db-password", nil, http.StatusNotFound, nil)
	// A rollback to a version that used it cannot start: its value is gone.
	api.must("POST", "/functions/db/rollback", map[string]int{"version": 2}, http.StatusOK, nil)
	testutil.WaitFor(t, time.Minute, func() bool {
		api.must("GET", "/functions/db", nil, http.StatusOK, &fn)
		return fn.Phase == "Failed"
	})
	if !strings.Contains(fn.Message, "db-password") || !strings.Contains(fn.Message, "deleted") {
		t.Errorf("rollback to a version whose secret was deleted: %s %q", fn.Phase, fn.Message)
	}

	for _, v := range []string{v1, v2} {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), hex.EncodeToString([]byte(v))} {
			if strings.Contains(answers.String(), form) {
				t.Errorf("an API answer holds a secret's value")
			}
			if strings.Contains(dev.stderr.String()+dev.stdout.String(), form) {
				t.Errorf("the server's log holds a secret's value")
			}
			if where := databaseHolds(t, dev, form); where != "" {
				t.Errorf("the database holds a secret's value, in table %s", where)
			}
		}
	}
}

// waitSecretValue waits until function db of c answers the hashes of value
// (secretHandler) as its secret variable and file.
func waitSecretValue(t *testing.T, dev *devServer, c *client.Client, value string) {
	t.Helper()
	want := fmt.Sprintf(`{"env": %q, "file": %q}`, hash(value), hash(value))
	testutil.WaitFor(t, time.Minute, func() bool {
		resp := post(t, dev, c, "db", "{}")
		got := readAll(t, resp.Body)
		return resp.StatusCode == http.StatusOK && jsonEqual(got, want)
	})
}

// TestRotateKEKWhileServing rotates the key-encryption key of a serving
// `sless dev` with `sless secrets rotate-kek`: the key file holds a new key
// only, and the server, which follows the file, opens the data key wrapped
// under it for a new value without a restart.
func TestRotateKEKWhileServing(t *testing.T) {
	dev := startDev(t)
	dev.waitReady(t)
	c := tenantClient(t, dev, "bob")
	api := &apiCaller{t: t, base: dev.base + "/v1/namespaces/" + c.Namespace(), token: dev.token(t, "bob", false)}
	v1, v2 := marker(t), marker(t)
	api.must("PUT", "/secrets/db-password", map[string]string{"value": v1}, http.StatusCreated, nil)
	api.must("POST", "/functions", map[string]any{"name": "db", "runtime": "python3.11",
		"secrets": map[string]string{"DB_PASSWORD": "db-password"}, "secret_files": []string{"db-password"}}, http.StatusCreated, nil)
	if v := upload(t, c, "db", map[string]string{"handler.py": secretHandler}); waitBuilt(t, c, "db", v).BuildStatus != "Succeeded" {
		t.Fatal("the build failed")
	}
	serve(t, c, "db")
	waitSecretValue(t, dev, c, v1)

	keyFile := filepath.Join(dev.dataDir, "secrets.key")
	before, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"secrets", "rotate-kek", "--data-dir", dev.dataDir, "--database-url", dev.databaseURL}, &out, &errs); err != nil {
		t.Fatalf("rotate-kek: %v\n%s", err, errs.String())
	}
	if !strings.Contains(out.String(), "1 namespace data key(s) re-wrapped") {
		t.Errorf("rotate-kek said %q, want one namespace re-wrapped", out.String())
	}
	after, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyLines(after)
	if fi, _ := os.Stat(keyFile); len(keys) != 1 || slices.Contains(keyLines(before), keys[0]) || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file after the rotation: %d key(s), mode %v; want one new key, 0600", len(keys), fi.Mode())
	}
	// The running server follows the file: the function restarts with the
	// new value, under the data key now wrapped by the new key.
	api.must("PUT", "/secrets/db-password", map[string]string{"value": v2}, http.StatusOK, nil)
	waitSecretValue(t, dev, c, v2)
	for _, key := range append(keys, keyLines(before)...) {
		if strings.Contains(out.String()+errs.String()+dev.stderr.String(), key) {
			t.Error("a key was printed")
		}
	}
}

// keyLines returns the keys of a key file's text: its lines but blank ones
// and comments.
func keyLines(text []byte) []string {
	var keys []string
	for _, line := range strings.Split(string(text), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			keys = append(keys, line)
		}
	}
	return keys
}

// marker is a random value no test writes anywhere else.
func marker(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "pw-" + hex.EncodeToString(b)
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// databaseHolds returns the first table of dev's database with a row whose
// text holds s, or "".
func databaseHolds(t *testing.T, dev *devServer, s string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dev.databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 10 {
		t.Fatalf("the database has only the tables %v", tables)
	}
	for _, table := range tables {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+table+` t WHERE strpos(t::text, $1) > 0`, s).Scan(&n); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if n > 0 {
			return table
		}
	}
	return ""
}

// apiCaller calls the API of one namespace as one tenant, keeping every answer.
type apiCaller struct {
	t       *testing.T
	base    string
	token   string
	answers *bytes.Buffer
}

// must sends body (JSON; nil: none) and fails the test unless the answer's
// status is want; out, when not nil, takes the answer's JSON.
func (a *apiCaller) must(method, path string, body any, want int, out any) {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, r)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	got := readAll(a.t, resp.Body)
	if a.answers != nil {
		a.answers.WriteString(got)
	}
	if resp.StatusCode != want {
		a.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, got, want)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(got), out); err != nil {
			a.t.Fatalf("%s %s: %v in %s", method, path, err, got)
		}
	}
}

// TestRewrapInlineKeys is the middle step of a rotation by restarts (keys
// inline, as a Kubernetes Secret gives them): with SLESS_SECRETS_KEY=NEW,OLD,
// `sless secrets rewrap` re-wraps the data keys wrapped by OLD under NEW, so
// that servers restarted with NEW alone open every value.
func TestRewrapInlineKeys(t *testing.T) {
	oldKey, newKey := newKeyLine(t), newKeyLine(t)
	dbURL := pgtest.NewDBURL(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	vault := func(keys string) *secrets.Vault {
		t.Helper()
		k, err := secrets.ParseKeyring([]byte(keys))
		if err != nil {
			t.Fatal(err)
		}
		return secrets.NewVault(pool, k)
	}
	value := marker(t)
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return vault(oldKey).Seal(ctx, tx, "sless-0123456789abcdef", "db", 1, []byte(value))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vault(newKey).Open(ctx, "sless-0123456789abcdef", "db", 1); err == nil {
		t.Fatal("the new key opens a value before the rewrap")
	}

	t.Setenv(secrets.EnvKey, newKey+","+oldKey)
	var out, errs bytes.Buffer
	if err := run(ctx, []string{"secrets", "rewrap", "--database-url", dbURL}, &out, &errs); err != nil {
		t.Fatalf("rewrap: %v\n%s", err, errs.String())
	}
	if !strings.Contains(out.String(), "1 namespace data key(s) re-wrapped") || strings.Contains(out.String(), newKey) {
		t.Errorf("rewrap said %q", out.String())
	}
	if got, err := vault(newKey).Open(ctx, "sless-0123456789abcdef", "db", 1); err != nil || string(got) != value {
		t.Fatalf("after the rewrap the new key alone opens %q, %v", got, err)
	}
}

// newKeyLine is a new key as a key file's line holds it.
func newKeyLine(t *testing.T) string {
	t.Helper()
	key := make([]byte, secrets.KeyBytes)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(key)
}
