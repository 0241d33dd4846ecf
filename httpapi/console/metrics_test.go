package console

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// renderFunction renders a function page of v as its owner would see it.
func renderFunction(t *testing.T, v functionView) string {
	t.Helper()
	c := &Console{log: slog.Default()}
	v.Namespace, v.Name, v.Own, v.CSRF = "sless-ns", "busy", true, "tok-123"
	v.Function = domain.Function{Namespace: "sless-ns", Name: "busy", Config: v.Function.Config}
	v.Async = asyncView{Config: domain.DefaultAsyncConfig(), QueuedCount: "0", DeadCount: "0"}
	w := httptest.NewRecorder()
	s := session{Session: store.Session{Namespace: "sless-ns", CSRF: "tok-123"}}
	c.renderView(w, httptest.NewRequest("GET", "/console/sless-ns/functions/busy", nil), http.StatusOK, "function",
		view{Session: &s, Page: v})
	if w.Code != http.StatusOK {
		t.Fatalf("render: %d %s", w.Code, w.Body)
	}
	return w.Body.String()
}

// TestMetricsPanel renders the Metrics panel of a function page: a row per
// window with the rate, the errors with their share, p50, p99 and cold
// starts; a dash for the durations of a window without invocations; and a
// sentence instead of the table when the day had none.
func TestMetricsPanel(t *testing.T) {
	t.Parallel()
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	st := store.FunctionStats{
		Hour: store.InvocationStats{Window: time.Hour},
		Day: store.InvocationStats{Window: 24 * time.Hour, Count: 2880, Errors: 3, ColdStarts: 7,
			P50: ms(12.3), P99: ms(1500)},
	}
	page := renderFunction(t, functionView{Metrics: newMetricsView(st)})
	panel := page[strings.Index(page, `id="metrics"`):]
	panel = panel[:strings.Index(panel, "</section>")]
	for _, want := range []string{
		`<tr id="metrics-hour"><th scope="row">last hour</th><td>0</td><td>0</td><td>0</td><td>—</td><td>—</td><td>0</td></tr>`,
		`<tr id="metrics-day"><th scope="row">last day</th><td>2880</td><td>2.00</td><td class="error">3 (0.1%)</td><td>12.3 ms</td><td>1500.0 ms</td><td>7</td></tr>`,
	} {
		if !strings.Contains(panel, want) {
			t.Errorf("the panel lacks %s:\n%s", want, panel)
		}
	}
	if strings.Contains(panel, "no-metrics") {
		t.Errorf("a day with invocations says it has none:\n%s", panel)
	}

	none := renderFunction(t, functionView{Metrics: newMetricsView(store.FunctionStats{
		Hour: store.InvocationStats{Window: time.Hour}, Day: store.InvocationStats{Window: 24 * time.Hour}})})
	if !strings.Contains(none, `<p class="muted" id="no-metrics">No invocations in the last day.</p>`) || strings.Contains(none, `id="metrics-table"`) {
		t.Errorf("a function without invocations:\n%s", none)
	}
}

// TestMetricsFormats: rates and shares too small for their decimals say
// so rather than showing as zero.
func TestMetricsFormats(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		got, want string
	}{
		{perMinute(0), "0"},
		{perMinute(1.0 / 1440), "< 0.01"},
		{perMinute(4.0 / 60), "0.07"},
		{perMinute(1234.4), "1234"},
		{percent(1.0 / 3000 * 100), "< 0.1%"},
		{percent(25), "25.0%"},
		{percent(100), "100.0%"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
