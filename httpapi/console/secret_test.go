package console

import (
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// TestFunctionSecrets: a function page lists the secrets the function uses
// (variables by name, then files at /run/secrets/<name>) with the version
// it runs, says when the secret has a newer one, and links each to the
// secrets page.
func TestFunctionSecrets(t *testing.T) {
	t.Parallel()
	cfg := domain.FunctionConfig{Secrets: map[string]string{"DB_PASSWORD": "db", "API_KEY": "stripe"}, SecretFiles: []string{"tls-key", "ca"},
		SecretVersions: map[string]int{"db": 2, "stripe": 1, "tls-key": 4, "ca": 1}}
	newest := []store.SecretInfo{{Secret: domain.Secret{Name: "ca", Version: 1}}, {Secret: domain.Secret{Name: "db", Version: 3}},
		{Secret: domain.Secret{Name: "stripe", Version: 1}}, {Secret: domain.Secret{Name: "tls-key", Version: 4}}}
	refs := secretRefs(cfg, newest)
	want := []secretRef{{Env: "API_KEY", Secret: "stripe", Version: 1}, {Env: "DB_PASSWORD", Secret: "db", Version: 2, Newest: 3},
		{Path: "/run/secrets/ca", Secret: "ca", Version: 1}, {Path: "/run/secrets/tls-key", Secret: "tls-key", Version: 4}}
	if len(refs) != len(want) {
		t.Fatalf("refs %+v, want %+v", refs, want)
	}
	for i := range want {
		if refs[i] != want[i] {
			t.Errorf("ref %d = %+v, want %+v", i, refs[i], want[i])
		}
	}

	page := renderFunction(t, functionView{Function: domain.Function{Config: cfg}, Secrets: refs})
	table := page[strings.Index(page, `id="fn-secrets"`):]
	table = table[:strings.Index(table, "</table>")]
	for _, row := range []string{
		`<tr><th scope="row"><code>API_KEY</code></th><td>variable</td><td>secret <a href="/console/sless-ns/secrets#secret-stripe">stripe</a> v1</td></tr>`,
		`<tr><th scope="row"><code>DB_PASSWORD</code></th><td>variable</td><td>secret <a href="/console/sless-ns/secrets#secret-db">db</a> v2 <span class="muted">(v3 is newer)</span></td></tr>`,
		`<tr><th scope="row"><code>/run/secrets/ca</code></th><td>file</td><td>secret <a href="/console/sless-ns/secrets#secret-ca">ca</a> v1</td></tr>`,
	} {
		if !strings.Contains(table, row) {
			t.Errorf("the secrets table lacks %s:\n%s", row, table)
		}
	}
	if strings.Index(table, "API_KEY") > strings.Index(table, "DB_PASSWORD") || strings.Index(table, "/run/secrets/ca") > strings.Index(table, "/run/secrets/tls-key") {
		t.Errorf("the secrets are out of order:\n%s", table)
	}
	if plain := renderFunction(t, functionView{}); strings.Contains(plain, "fn-secrets") {
		t.Errorf("a function without secrets has a secrets table")
	}
}
