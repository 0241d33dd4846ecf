package console

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/store"
)

// TestScaleSection renders a function page's Scaling section: the settings
// (the defaults said for people), the instances running now when the
// server says, and the form to change them for the owner only, with the
// session's CSRF token.
func TestScaleSection(t *testing.T) {
	t.Parallel()
	page := func(own bool, cfg domain.FunctionConfig, now *wire.Instances) string {
		t.Helper()
		f := domain.Function{Namespace: "sless-ns", Name: "busy", Config: cfg}
		c := &Console{log: slog.Default(), cfg: Config{Instances: func(ns, fn string) *wire.Instances {
			if ns != "sless-ns" || fn != "busy" {
				t.Errorf("Instances(%q, %q); want sless-ns, busy", ns, fn)
			}
			return now
		}}}
		v := functionView{Namespace: "sless-ns", Name: "busy", Own: own, CSRF: "tok-123", Function: f,
			Async: asyncView{Config: domain.DefaultAsyncConfig(), QueuedCount: "0", DeadCount: "0"}, Scale: c.newScaleView(f)}
		w := httptest.NewRecorder()
		s := session{Session: store.Session{Namespace: "sless-ns", CSRF: "tok-123"}}
		c.renderView(w, httptest.NewRequest("GET", "/console/sless-ns/functions/busy", nil), http.StatusOK, "function",
			view{Session: &s, Page: v})
		if w.Code != http.StatusOK {
			t.Fatalf("render: %d %s", w.Code, w.Body)
		}
		return w.Body.String()
	}

	set := page(true, domain.FunctionConfig{Runtime: domain.RuntimeNodeJS20, Scale: domain.ScaleConfig{MinInstances: 1, MaxInstances: 4, Concurrency: 8}},
		&wire.Instances{Ready: 1, Desired: 2, InFlight: 3})
	for _, want := range []string{
		`<dd id="scale-min">1, kept running</dd>`,
		`<dd id="scale-max">4</dd>`,
		`<dd id="scale-concurrency">8 per instance</dd>`,
		`<dd id="scale-now">1 ready of 2 desired, 3 in flight</dd>`,
		`<form method="post" action="/console/sless-ns/functions/busy/scale" class="pick" id="scale-form">`,
		`name="min_instances" min="0" max="1000" value="1"`,
		`name="max_instances" min="0" max="1000" value="4"`,
		`name="concurrency" min="0" max="1000" value="8"`,
	} {
		if !strings.Contains(set, want) {
			t.Errorf("the owner's page lacks %s", want)
		}
	}
	form := set[strings.Index(set, `id="scale-form"`):]
	if !strings.Contains(form[:strings.Index(form, "</form>")], `<input type="hidden" name="csrf" value="tok-123">`) {
		t.Errorf("the scaling form carries no CSRF token:\n%s", form)
	}

	defaults := page(false, domain.FunctionConfig{Runtime: domain.RuntimeGo123}, nil)
	for _, want := range []string{
		`<dd id="scale-min">0, scales to zero when idle</dd>`,
		`<dd id="scale-max">0, the platform's default</dd>`,
		`<dd id="scale-concurrency">0, the runtime's default: 16 per instance</dd>`,
	} {
		if !strings.Contains(defaults, want) {
			t.Errorf("an operator's page of a function with the defaults lacks %s", want)
		}
	}
	for _, unwanted := range []string{"scale-now", "instances now", "scale-form", "/scale"} {
		if strings.Contains(defaults, unwanted) {
			t.Errorf("an operator's page, without instances, has %s", unwanted)
		}
	}
}
