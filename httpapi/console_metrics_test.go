package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/store"
)

// TestConsoleMetricsPanel: the function page's Metrics panel sums up the
// invocation log over the last hour and the last day by the server's clock:
// requests and their rate a minute, errors with their share (an
// interrupted run is none), p50, p99 and cold starts; a function without
// invocations in the day says so.
func TestConsoleMetricsPanel(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("web")
	c.createFunction("idle")
	now := time.Now().UTC().Truncate(time.Second)
	f.clock.Freeze(now)
	w := f.store.NewInvocationWriter(store.InvocationWriterOptions{})
	for _, inv := range []store.Invocation{
		{Trigger: store.InvocationHTTP, Status: 200, Duration: 10 * time.Millisecond, ColdStart: true, StartedAt: now.Add(-time.Minute)},
		{Trigger: store.InvocationHTTP, Status: 500, Duration: 30 * time.Millisecond, StartedAt: now.Add(-20 * time.Minute)},
		{Trigger: store.InvocationHTTP, Status: 200, Duration: 20 * time.Millisecond, StartedAt: now.Add(-59 * time.Minute)},
		{Trigger: store.InvocationJob, Status: 504, Duration: 100 * time.Millisecond, StartedAt: now.Add(-5 * time.Hour)},
		{Trigger: store.InvocationCron, Status: 503, Duration: 40 * time.Millisecond, StartedAt: now.Add(-6 * time.Hour), Error: "interrupted by shutdown"},
		{Trigger: store.InvocationHTTP, Status: 500, Duration: time.Second, StartedAt: now.Add(-25 * time.Hour)}, // before the day
	} {
		inv.Namespace, inv.Function = c.ns, "web"
		w.Record(inv)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, f)
	b.signIn(c.token)

	_, body := b.page("/console/" + c.ns + "/functions/web")
	panel := between(t, body, `<section class="panel" id="metrics"`, `</section>`)
	for _, want := range []string{
		`<tr id="metrics-hour"><th scope="row">last hour</th><td>3</td><td>0.05</td><td class="error">1 (33.3%)</td><td>20.0 ms</td><td>30.0 ms</td><td>1</td></tr>`,
		`<tr id="metrics-day"><th scope="row">last day</th><td>5</td><td>&lt; 0.01</td><td class="error">2 (40.0%)</td><td>30.0 ms</td><td>100.0 ms</td><td>1</td></tr>`,
	} {
		if !strings.Contains(panel, want) {
			t.Errorf("the Metrics panel lacks %s:\n%s", want, panel)
		}
	}

	_, body = b.page("/console/" + c.ns + "/functions/idle")
	panel = between(t, body, `<section class="panel" id="metrics"`, `</section>`)
	if !strings.Contains(panel, `id="no-metrics">No invocations in the last day.`) || strings.Contains(panel, "metrics-table") {
		t.Errorf("the Metrics panel of a function never invoked:\n%s", panel)
	}
}
