package httpapi_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/slessio/sless/httpapi"
)

func TestSecrets(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	value := "s3cr3t-" + uniqueSub(t)

	// Bad requests say what is wrong and change nothing.
	c.do("PUT", c.p("/secrets/db"), map[string]any{}).wantError(400, "INVALID", "value", "required")
	c.do("PUT", c.p("/secrets/db"), map[string]any{"value": "a", "value_base64": "YQ=="}).wantError(400, "INVALID", "value", "not both")
	c.do("PUT", c.p("/secrets/db"), map[string]any{"value_base64": "%%%"}).wantError(400, "INVALID", "value_base64", "base64")
	c.do("PUT", c.p("/secrets/db"), map[string]any{"value": strings.Repeat("x", 64<<10+1)}).wantError(413, "TOO_LARGE", "value", "64 KiB")
	c.do("PUT", c.p("/secrets/Bad_Name"), map[string]any{"value": "x"}).wantError(404, "NOT_FOUND", "")
	c.do("GET", c.p("/secrets/db"), nil).wantError(404, "NOT_FOUND", "")
	c.do("DELETE", c.p("/secrets/db"), nil).wantError(404, "NOT_FOUND", "")

	first := c.do("PUT", c.p("/secrets/db"), map[string]any{"value": value}).want(201).obj()
	if first["version"] != float64(1) || first["name"] != "db" {
		t.Fatalf("first set: %v", first)
	}
	second := c.do("PUT", c.p("/secrets/db"), map[string]any{"value_base64": base64.StdEncoding.EncodeToString([]byte(value + "2"))}).want(200).obj()
	if second["version"] != float64(2) || second["created_at"] != first["created_at"] {
		t.Fatalf("second set: %v (first %v)", second, first)
	}

	// A function uses it; its answer pins the version and warns of a
	// credential in a plain variable.
	fn := c.do("POST", c.p("/functions"), map[string]any{"name": "api", "runtime": "python3.11",
		"env_vars": map[string]string{"GITHUB_TOKEN": "x"}, "secrets": map[string]string{"DB_PASSWORD": "db"}}).want(201).obj()
	if sv, _ := fn["secret_versions"].(map[string]any); sv["db"] != float64(2) {
		t.Errorf("secret_versions %v, want db: 2", fn["secret_versions"])
	}
	if w, _ := fn["warnings"].([]any); len(w) != 1 || !strings.Contains(w[0].(string), "GITHUB_TOKEN") {
		t.Errorf("warnings %v, want one naming GITHUB_TOKEN", fn["warnings"])
	}
	if got := c.do("GET", c.p("/functions/api"), nil).want(200).obj(); got["warnings"] != nil || got["secret_files"] == nil {
		t.Errorf("GET shows warnings %v (only a write's answer has them), secret_files %v ([] when none)", got["warnings"], got["secret_files"])
	}
	c.do("POST", c.p("/functions"), map[string]any{"name": "x", "runtime": "python3.11", "secret_files": []string{"nope"}}).
		wantError(422, "UNPROCESSABLE", "secrets", "nope")
	c.do("PUT", c.p("/functions/api"), map[string]any{"secrets": map[string]string{"GITHUB_TOKEN": "db"}}).
		wantError(400, "INVALID", "secrets", "env_vars")

	got := c.do("GET", c.p("/secrets/db"), nil).want(200).obj()
	if users, _ := got["used_by"].([]any); len(users) != 1 || users[0] != "api" {
		t.Errorf("used_by %v, want [api]", got["used_by"])
	}
	c.do("DELETE", c.p("/secrets/db"), nil).wantError(409, "CONFLICT", "", "api")

	// Another tenant sees none of it.
	other := f.tenant()
	other.do("GET", "/v1/namespaces/"+c.ns+"/secrets", nil).wantError(403, "FORBIDDEN", "")
	var list struct {
		Secrets []map[string]any `json:"secrets"`
	}
	other.do("GET", other.p("/secrets"), nil).want(200).decode(&list)
	if len(list.Secrets) != 0 {
		t.Errorf("another namespace lists %v", list.Secrets)
	}

	c.do("PUT", c.p("/functions/api"), map[string]any{"secrets": map[string]string{}}).want(200)
	c.do("DELETE", c.p("/secrets/db"), nil).want(204)
	c.do("GET", c.p("/secrets"), nil).want(200).decode(&list)
	if len(list.Secrets) != 0 {
		t.Errorf("after the delete: %v", list.Secrets)
	}
	if n := f.countRows("secret_values", c.ns); n != 0 {
		t.Errorf("%d sealed values left after the delete", n)
	}
}

// Without a secrets key, writes say so (503) and reads work.
func TestSecretsOff(t *testing.T) {
	t.Parallel()
	f := setup(t, func(cfg *httpapi.Config) { cfg.Secrets = nil })
	c := f.tenant()
	c.do("PUT", c.p("/secrets/db"), map[string]any{"value": "x"}).wantError(503, "UNAVAILABLE", "", "SLESS_SECRETS_KEY")
	c.do("GET", c.p("/secrets"), nil).want(200)
}

// countRows counts the rows of table that belong to namespace ns.
func (f *fixture) countRows(table, ns string) int {
	f.t.Helper()
	var n int
	if err := f.pool.QueryRow(f.t.Context(), `SELECT count(*) FROM `+table+` WHERE namespace = $1`, ns).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}
