package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/store"
)

// setActive records what a driver would report for a trigger.
func (f *fixture) setActive(ns, trigger string, active bool) {
	f.t.Helper()
	ctx := context.Background()
	_, err := f.store.Execute(ctx, store.Metadata{Actor: "test-driver"}, func(tx *store.Tx) error {
		t := domain.NewTrigger(ns, trigger)
		stream := domain.TriggerStream(ns, trigger)
		if err := tx.Load(ctx, stream, t); err != nil {
			return err
		}
		return tx.Append(ctx, stream, t, t.SetActive(active, time.Now()))
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func TestHumanListing(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *httpapi.Config) { c.HiddenFunctions = []string{"internal"} })
	c := f.tenant()
	for _, name := range []string{"zeta-web", "alpha-cron", "beta-runner", "internal", "broken"} {
		c.createFunction(name)
	}
	c.do("POST", c.p("/triggers"), map[string]any{"name": "zw", "type": "http", "function": "zeta-web"}).want(201)
	c.do("POST", c.p("/triggers"), map[string]any{"name": "ac", "type": "cron", "function": "alpha-cron", "schedule": "*/5 * * * *"}).want(201)
	f.setActive(c.ns, "zw", true)
	c.upload("broken", handlerZip(t, "1")).want(202)
	f.build(c.ns, "broken", 1, "SyntaxError: <script>alert(1)</script>\n  line 2")

	text := string(c.do("GET", c.p("/functions"), nil, "Accept", "text/plain").want(200).body)
	for _, want := range []string{
		"# HTTP endpoint (python3.11) — Pending, active\nname:     zeta-web",
		"url:      " + externalURL + "/fn/" + c.ns + "/zeta-web",
		"# Cron '*/5 * * * *' (python3.11) — Pending, inactive\nname:     alpha-cron",
		"cron:     */5 * * * *",
		"# Job/runner without trigger (python3.11) — Pending\nname:     beta-runner",
		"phase:    Failed",
		"message:  SyntaxError: <script>alert(1)</script> line 2",
		"-- namespace " + c.ns + ": 4 functions",
	} {
		if !strings.Contains(text, want) {
			t.Fatalf("text listing lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "internal") {
		t.Fatalf("hidden function listed:\n%s", text)
	}
	// Active first, then by name.
	order := []string{"name:     zeta-web", "name:     alpha-cron", "name:     beta-runner", "name:     broken"}
	last := -1
	for _, o := range order {
		i := strings.Index(text, o)
		if i < last {
			t.Fatalf("order: %q comes too early in\n%s", o, text)
		}
		last = i
	}

	r := c.do("GET", c.p("/functions"), nil, "Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	r.want(200)
	html := string(r.body)
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(html, "<table>") ||
		!strings.Contains(html, "4 functions") || !strings.Contains(html, `<a href="`+externalURL+"/fn/"+c.ns+`/zeta-web">`) {
		t.Fatalf("html listing:\n%s", html)
	}
	if strings.Contains(html, "<script>alert") || !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("build message not escaped in HTML:\n%s", html)
	}

	// JSON unless text is preferred: no header, */*, JSON first, text at lower q.
	for _, accept := range []string{"", "*/*", "application/json", "application/json, text/plain;q=0.5", "text/*;q=0.1, */*"} {
		r := c.do("GET", c.p("/functions"), nil, "Accept", accept).want(200)
		if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Fatalf("Accept %q gave %s", accept, r.header.Get("Content-Type"))
		}
		var list struct{ Functions []any }
		r.decode(&list)
		if len(list.Functions) != 5 { // JSON shows hidden functions too
			t.Fatalf("Accept %q: %d functions", accept, len(list.Functions))
		}
	}
	if ct := c.do("GET", c.p("/functions"), nil, "Accept", "text/*").want(200).header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("Accept text/* gave %s", ct)
	}
}
