package httpapi_test

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/httpapi/wire"
)

// TestConsoleScaleSettings: the function page shows min_instances,
// max_instances and concurrency as the API set them; the owner's form
// changes them (a field left empty keeps its value) with no new version,
// as the API's PUT does; a bad value is refused naming the field and
// changes nothing; without the CSRF token, for an operator or another
// tenant, the change is refused.
func TestConsoleScaleSettings(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.do("POST", c.p("/functions"), map[string]any{"name": "busy", "runtime": "go1.23", "max_instances": 4}).want(201)
	c.upload("busy", handlerZip(t, "1")).want(202)
	f.build(c.ns, "busy", 1, "")
	b := newBrowser(t, f)
	csrf := b.signIn(c.token)
	page := "/console/" + c.ns + "/functions/busy"

	scale := func() [3]int {
		t.Helper()
		var fn wire.Function
		c.do("GET", c.p("/functions/busy"), nil).want(200).decode(&fn)
		return [3]int{fn.MinInstances, fn.MaxInstances, fn.Concurrency}
	}
	versions := func() int {
		t.Helper()
		var l wire.VersionList
		c.do("GET", c.p("/functions/busy/versions"), nil).want(200).decode(&l)
		return len(l.Versions)
	}
	post := func(b *browser, form url.Values) (int, string, string) {
		t.Helper()
		resp := b.do("POST", page+"/scale", form)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(body)
	}

	_, body := b.page(page)
	section := between(t, body, `id="scale"`, `</section>`)
	for _, want := range []string{`<dd id="scale-min">0, scales to zero when idle</dd>`, `<dd id="scale-max">4</dd>`,
		`<dd id="scale-concurrency">0, the runtime's default: 16 per instance</dd>`, `id="scale-form"`, `name="max_instances" min="0" max="1000" value="4"`} {
		if !strings.Contains(section, want) {
			t.Errorf("the Scaling section lacks %s:\n%s", want, section)
		}
	}

	status, loc, _ := post(b, url.Values{"csrf": {csrf}, "min_instances": {"1"}, "max_instances": {"3"}, "concurrency": {"4"}})
	if status != http.StatusSeeOther || loc != page+"#scale" {
		t.Fatalf("POST scale: %d → %q", status, loc)
	}
	if got := scale(); got != [3]int{1, 3, 4} {
		t.Fatalf("after the form: min, max, concurrency = %v; want [1 3 4]", got)
	}
	status, _, _ = post(b, url.Values{"csrf": {csrf}, "min_instances": {""}, "max_instances": {"5"}, "concurrency": {" "}})
	if got := scale(); status != http.StatusSeeOther || got != [3]int{1, 5, 4} {
		t.Fatalf("max_instances alone: %d, %v; want [1 5 4] (the empty fields kept)", status, got)
	}
	if n := versions(); n != 1 {
		t.Fatalf("%d versions after changing the scaling only; want 1", n)
	}
	_, body = b.page(page)
	if section = between(t, body, `id="scale"`, `</section>`); !strings.Contains(section, `<dd id="scale-min">1, kept running</dd>`) ||
		!strings.Contains(section, `<dd id="scale-concurrency">4 per instance</dd>`) {
		t.Fatalf("the Scaling section after the change:\n%s", section)
	}

	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"min_instances": {"6"}}, "min_instances: 6 is more than max_instances (5)"},
		{url.Values{"concurrency": {"1001"}}, "concurrency: 1001 is out of range"},
		{url.Values{"max_instances": {"lots"}}, `max_instances: "lots" is not a whole number`},
	} {
		tc.form.Set("csrf", csrf)
		status, _, body := post(b, tc.form)
		if status != http.StatusBadRequest || !strings.Contains(html.UnescapeString(body), tc.want) {
			t.Errorf("POST %v: %d; want 400 saying %q\n%s", tc.form, status, tc.want, body)
		}
	}
	if got := scale(); got != [3]int{1, 5, 4} {
		t.Fatalf("after refused forms: %v; want [1 5 4]", got)
	}

	// Only the owner, with the session's token.
	change := url.Values{"min_instances": {"0"}}
	if status, _, _ := post(b, change); status != http.StatusForbidden {
		t.Errorf("POST without the CSRF token: %d, want 403", status)
	}
	op := newBrowser(t, f)
	opCSRF := op.signIn(f.admin().token)
	if _, body := op.page(page); !strings.Contains(body, `id="scale-min"`) || strings.Contains(body, `id="scale-form"`) {
		t.Errorf("an operator's page: want the settings without the form")
	}
	if status, _, _ := post(op, url.Values{"csrf": {opCSRF}, "min_instances": {"0"}}); status != http.StatusForbidden {
		t.Errorf("an operator's POST: %d, want 403", status)
	}
	other := newBrowser(t, f)
	otherCSRF := other.signIn(f.tenant().token)
	if status, _, _ := post(other, url.Values{"csrf": {otherCSRF}, "min_instances": {"0"}}); status != http.StatusForbidden {
		t.Errorf("another tenant's POST: %d, want 403", status)
	}
	if got := scale(); got != [3]int{1, 5, 4} {
		t.Fatalf("after refused changes: %v; want [1 5 4]", got)
	}
}

// TestConsoleScaleInstancesNow: on a server that runs functions, the
// Scaling section says what runs now, as the API's function answer does: a
// function kept running (min_instances 1) after a call has an instance
// ready.
func TestConsoleScaleInstancesNow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Python function")
	}
	t.Parallel()
	env := setupInvoke(t)
	c := env.tenant()
	c.do("POST", c.p("/functions"), map[string]any{"name": "warm", "runtime": "python3.11", "min_instances": 1}).want(201)
	c.upload("warm", mustZip(t, zipEntry{name: "handler.py", data: batchCode})).want(202)
	env.build(c, "warm", 1)
	c.invoke("warm", `{}`).want(200)
	env.waitRoute(t, c.ns, "warm", "ready", func(st proxy.RouteState) bool { return st.Ready == 1 && st.InFlight == 0 })

	var fn wire.Function
	c.do("GET", c.p("/functions/warm"), nil).want(200).decode(&fn)
	if fn.Instances == nil || fn.Instances.Ready != 1 {
		t.Fatalf("the API's instances = %+v; want 1 ready", fn.Instances)
	}
	b := newBrowser(t, env.fixture)
	b.signIn(c.token)
	_, body := b.page("/console/" + c.ns + "/functions/warm")
	want := fmt.Sprintf(`<dd id="scale-now">1 ready of %d desired, 0 in flight</dd>`, fn.Instances.Desired)
	if section := between(t, body, `id="scale"`, `</section>`); !strings.Contains(section, want) {
		t.Fatalf("the Scaling section lacks %s:\n%s", want, section)
	}
}
