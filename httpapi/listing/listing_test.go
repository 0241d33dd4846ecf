package listing

import (
	"testing"

	"github.com/slessio/sless/domain"
)

// TestEntryTellsOfItsLeadingTrigger: the comment tells of the first type in
// domain.TriggerTypes that the function has (an enabled one of the triggers
// its workload serves, the first of the others), and the URL and cron
// columns come from the triggers' types.
func TestEntryTellsOfItsLeadingTrigger(t *testing.T) {
	t.Parallel()
	urlOf := func(ns, fn string) string { return "https://sless.example/fn/" + ns + "/" + fn }
	web := func(enabled bool) domain.Trigger { return domain.Trigger{Type: domain.TriggerHTTP, Enabled: enabled} }
	cron := func(schedule string, enabled bool) domain.Trigger {
		return domain.Trigger{Type: domain.TriggerCron, Schedule: schedule, Enabled: enabled}
	}
	cases := []struct {
		name     string
		triggers []domain.Trigger
		comment  string
		url      bool
		cron     string
	}{
		{"none", nil, "Job/runner without trigger (python3.11) — Ready", false, ""},
		{"http", []domain.Trigger{web(true)}, "HTTP endpoint (python3.11) — Ready, inactive", true, ""},
		{"an enabled http one leads", []domain.Trigger{web(false), web(true)}, "HTTP endpoint (python3.11) — Ready, inactive", true, ""},
		{"http disabled", []domain.Trigger{web(false)}, "HTTP endpoint (python3.11) — Ready, disabled", true, ""},
		{"http before cron", []domain.Trigger{cron("0 3 * * *", true), web(false)}, "HTTP endpoint (python3.11) — Ready, disabled", true, "0 3 * * *"},
		{"the first cron one leads", []domain.Trigger{cron("0 3 * * *", false), cron("*/5 * * * *", true)},
			"Cron '0 3 * * *' (python3.11) — Ready, disabled", false, "0 3 * * *, */5 * * * *"},
		{"a type with no row", []domain.Trigger{{Type: "queue", Schedule: "x", Enabled: true}}, "Job/runner without trigger (python3.11) — Ready", false, ""},
	}
	for _, c := range cases {
		f := domain.Function{Namespace: "ns", Name: "f", Phase: domain.PhaseReady, Config: domain.FunctionConfig{Runtime: domain.RuntimePython311}}
		e := newEntry(f, c.triggers, urlOf)
		if e.Comment != c.comment || (e.URL != "") != c.url || e.Cron != c.cron {
			t.Errorf("%s: comment %q, URL %q, cron %q; want %q, URL %v, cron %q", c.name, e.Comment, e.URL, e.Cron, c.comment, c.url, c.cron)
		}
	}
}
