package httpapi_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"html"
	"net/http"
	"strings"
	"testing"
)

// TestConsoleSecrets: the secrets page lists a namespace's secrets (name,
// newest version, when set, the functions using each, linked), says how
// to set one when there is none, and is linked from the namespace's pages;
// the function page says which variable and file each secret becomes, at
// which version. No page shows a value set through the API: not the
// secrets page, the function page (its event history included) nor the
// namespace page, for the owner or an operator.
func TestConsoleSecrets(t *testing.T) {
	t.Parallel()
	f := setup(t) // with a vault (apitest)
	c := f.tenant()
	b := newBrowser(t, f)
	b.signIn(c.token)
	ns := "/console/" + c.ns

	_, body := b.page(ns + "/secrets")
	if !strings.Contains(body, `id="no-secrets"`) || !strings.Contains(body, "<code>sless secret set NAME</code>") {
		t.Fatalf("an empty secrets page does not say how to set one:\n%s", body)
	}
	_, body = b.page(ns)
	if !strings.Contains(body, `<a href="`+ns+`/secrets" id="nav-secrets">Secrets</a>`) ||
		!strings.Contains(body, `id="nav-functions" aria-current="page"`) {
		t.Fatalf("the namespace page does not link the secrets page:\n%s", between(t, body, `<main`, `<h1`))
	}

	// Values an escaping or an encoding would still give away.
	salt := make([]byte, 8)
	_, _ = rand.Read(salt)
	password := "pw-<b>" + hex.EncodeToString(salt) + "</b>&"
	rotated := "rotated-" + hex.EncodeToString(salt)
	tlsKey := "-----BEGIN KEY-----" + hex.EncodeToString(salt)
	c.do("PUT", c.p("/secrets/db-password"), map[string]any{"value": password}).want(201)
	c.do("PUT", c.p("/secrets/tls-key"), map[string]any{"value_base64": base64.StdEncoding.EncodeToString([]byte(tlsKey))}).want(201)
	c.do("PUT", c.p("/secrets/unused"), map[string]any{"value": password}).want(201)
	c.do("POST", c.p("/functions"), map[string]any{"name": "web", "runtime": "go1.23",
		"secrets": map[string]string{"DB_PASSWORD": "db-password"}, "secret_files": []string{"tls-key"}}).want(201)
	c.do("POST", c.p("/functions"), map[string]any{"name": "worker", "runtime": "go1.23",
		"secrets": map[string]string{"PASSWORD": "db-password"}}).want(201)
	c.do("PUT", c.p("/secrets/db-password"), map[string]any{"value": rotated}).want(200)

	status, body := b.page(ns + "/secrets")
	if status != http.StatusOK {
		t.Fatalf("secrets page: %d\n%s", status, body)
	}
	if !strings.Contains(body, `<a href="`+ns+`/secrets" id="nav-secrets" aria-current="page">Secrets</a>`) {
		t.Errorf("the secrets page's navigation does not mark it current")
	}
	for name, want := range map[string][]string{
		"db-password": {`<td>v2</td>`, `<a href="` + ns + `/functions/web">web</a>, <a href="` + ns + `/functions/worker">worker</a>`},
		"tls-key":     {`<td>v1</td>`, `<a href="` + ns + `/functions/web">web</a></td>`},
		"unused":      {`<td>v1</td>`, `<span class="muted">no function</span>`},
	} {
		row := between(t, body, `<tr id="secret-`+name+`">`, `</tr>`)
		for _, w := range append(want, `<code>`+name+`</code>`, " UTC</td>") {
			if !strings.Contains(row, w) {
				t.Errorf("the row of %s lacks %s:\n%s", name, w, row)
			}
		}
	}
	if strings.Contains(body, "no-secrets") {
		t.Errorf("a page with secrets says there are none")
	}

	_, fn := b.page(ns + "/functions/web")
	table := between(t, fn, `id="fn-secrets"`, `</table>`)
	for _, row := range []string{
		`<tr><th scope="row"><code>DB_PASSWORD</code></th><td>variable</td><td>secret <a href="` + ns + `/secrets#secret-db-password">db-password</a> v2</td></tr>`,
		`<tr><th scope="row"><code>/run/secrets/tls-key</code></th><td>file</td><td>secret <a href="` + ns + `/secrets#secret-tls-key">tls-key</a> v1</td></tr>`,
	} {
		if !strings.Contains(table, row) {
			t.Errorf("the function's secrets lack %s:\n%s", row, table)
		}
	}

	op := newBrowser(t, f)
	op.signIn(f.admin().token)
	pages := map[string]string{"secrets": body, "function web": fn}
	for _, p := range []string{ns, ns + "/functions/worker"} {
		_, pages[p] = b.page(p)
	}
	for _, p := range []string{ns + "/secrets", ns + "/functions/web"} {
		status, pages["operator "+p] = op.page(p)
		if status != http.StatusOK || !strings.Contains(pages["operator "+p], "db-password") {
			t.Errorf("an operator's %s: %d", p, status)
		}
	}
	leaks := []string{hex.EncodeToString(salt)} // in every value
	for _, v := range []string{password, rotated, tlsKey} {
		leaks = append(leaks, v, html.EscapeString(v), base64.StdEncoding.EncodeToString([]byte(v)))
	}
	for page, text := range pages {
		for _, leak := range leaks {
			if strings.Contains(text, leak) || strings.Contains(html.UnescapeString(text), leak) {
				t.Errorf("the page %s shows a secret's value (%q)", page, leak)
			}
		}
	}

	other := newBrowser(t, f)
	other.signIn(f.tenant().token)
	if status, _ := other.page(ns + "/secrets"); status != http.StatusForbidden {
		t.Errorf("another tenant reads the secrets page: %d, want 403", status)
	}
}
