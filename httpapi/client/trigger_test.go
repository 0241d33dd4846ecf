package client_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// testTriggers: http and cron triggers, their URL and next run, enabling and
// deleting, with the 409, 422 (field function) and 400 (field schedule).
func testTriggers(t *testing.T, f *fixture) {
	ctx := context.Background()
	c, _ := f.tenant(t)
	if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "web", Runtime: "nodejs20"}); err != nil {
		t.Fatal(err)
	}
	web, err := c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "web-http", Type: domain.TriggerHTTP, Function: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if !web.Enabled || web.Type != domain.TriggerHTTP || web.URL != externalURL+"/fn/"+c.Namespace()+"/web" || web.Namespace != c.Namespace() {
		t.Fatalf("http trigger %+v", web)
	}
	tick, err := c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "tick", Type: domain.TriggerCron, Function: "web",
		Schedule: "*/5 * * * *", Enabled: client.Ptr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if tick.Enabled || tick.Schedule != "*/5 * * * *" || tick.NextRunAt != nil || tick.URL != "" {
		t.Fatalf("disabled cron trigger %+v", tick)
	}

	_, err = c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "tick", Type: domain.TriggerCron, Function: "web", Schedule: "* * * * *"})
	wantError(t, err, http.StatusConflict, client.CodeConflict, "")
	_, err = c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "orphan", Type: domain.TriggerHTTP, Function: "absent"})
	wantError(t, err, http.StatusUnprocessableEntity, client.CodeUnprocessable, "function")
	_, err = c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "bad", Type: domain.TriggerHTTP, Function: "web", Schedule: "* * * * *"})
	wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "schedule")

	got, err := c.GetTrigger(ctx, "web-http")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "web-http" || got.URL != web.URL || !got.CreatedAt.Equal(web.CreatedAt) {
		t.Fatalf("got %+v, created %+v", got, web)
	}
	for function, want := range map[string]int{"": 2, "web": 2, "other": 0} {
		ts, err := c.ListTriggers(ctx, function)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != want {
			t.Fatalf("triggers of %q: %+v, want %d", function, ts, want)
		}
	}

	on, err := c.SetTriggerEnabled(ctx, "tick", true)
	if err != nil {
		t.Fatal(err)
	}
	if !on.Enabled || on.NextRunAt == nil || !on.NextRunAt.After(time.Now()) {
		t.Fatalf("enabled cron trigger %+v", on)
	}
	_, err = c.SetTriggerEnabled(ctx, "absent", true)
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")

	if err := c.DeleteTrigger(ctx, "tick"); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetTrigger(ctx, "tick")
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
	wantError(t, c.DeleteTrigger(ctx, "tick"), http.StatusNotFound, client.CodeNotFound, "")
}
