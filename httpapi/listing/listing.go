// Package listing builds the human listing of a namespace (SPEC §7): every
// function with a one-line comment, its state, URL and schedule, active
// functions first and then by name. The API renders it as text or HTML for
// GET .../functions, the console as its namespace page and as the plain-text
// answer of /console/{ns} and /funcs/{ns} for curl.
package listing

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/slessio/sless/domain"
)

// Time is the layout of the listing's timestamps.
const Time = "2006-01-02 15:04:05Z07:00"

// Entry is one function of the listing.
type Entry struct {
	Comment string
	Name    string
	Runtime string
	Phase   string
	Active  bool
	URL     string
	Cron    string
	Created string
	Built   string
	Message string
	// Function and Triggers are what the entry was built from, for pages
	// that show more (the console's cards).
	Function domain.Function
	Triggers []domain.Trigger
}

// Page is the whole listing of a namespace.
type Page struct {
	Namespace string
	Entries   []Entry
}

// Build lists fs with their triggers ts, leaving out the functions named in
// hidden; urlOf gives a function's public URL.
func Build(ns string, fs []domain.Function, ts []domain.Trigger, urlOf func(ns, function string) string, hidden map[string]bool) Page {
	byFunction := map[string][]domain.Trigger{}
	for _, t := range ts {
		byFunction[t.Function] = append(byFunction[t.Function], t)
	}
	page := Page{Namespace: ns}
	for _, f := range fs {
		if !hidden[f.Name] {
			page.Entries = append(page.Entries, newEntry(f, byFunction[f.Name], urlOf))
		}
	}
	sort.SliceStable(page.Entries, func(i, j int) bool {
		a, b := page.Entries[i], page.Entries[j]
		if a.Active != b.Active {
			return a.Active
		}
		return a.Name < b.Name
	})
	return page
}

// newEntry describes f and its triggers. A function is active when one of
// its enabled triggers has its workload running or scheduled.
func newEntry(f domain.Function, ts []domain.Trigger, urlOf func(ns, function string) string) Entry {
	e := Entry{Name: f.Name, Runtime: string(f.Config.Runtime), Phase: string(f.Phase), Message: f.Message,
		Created: f.CreatedAt.UTC().Format(Time), Function: f, Triggers: ts}
	if !f.LastBuiltAt.IsZero() {
		e.Built = f.LastBuiltAt.UTC().Format(Time)
	}
	var httpT, cronT *domain.Trigger
	var crons []string
	for i := range ts {
		t := &ts[i]
		e.Active = e.Active || (t.Enabled && t.Active)
		switch t.Type {
		case domain.TriggerHTTP:
			if httpT == nil || (t.Enabled && !httpT.Enabled) {
				httpT = t
			}
		case domain.TriggerCron:
			if cronT == nil {
				cronT = t
			}
			crons = append(crons, t.Schedule)
		}
	}
	e.Cron = strings.Join(crons, ", ")
	state := e.Phase + ", " + activeWord(e.Active, httpT, cronT)
	switch {
	case httpT != nil:
		e.URL = urlOf(f.Namespace, f.Name)
		e.Comment = fmt.Sprintf("HTTP endpoint (%s) — %s", e.Runtime, state)
	case cronT != nil:
		e.Comment = fmt.Sprintf("Cron '%s' (%s) — %s", cronT.Schedule, e.Runtime, state)
	default:
		e.Comment = fmt.Sprintf("Job/runner without trigger (%s) — %s", e.Runtime, e.Phase)
	}
	return e
}

func activeWord(active bool, httpT, cronT *domain.Trigger) string {
	switch {
	case active:
		return "active"
	case (httpT != nil && !httpT.Enabled) || (httpT == nil && cronT != nil && !cronT.Enabled):
		return "disabled"
	}
	return "inactive"
}

// Text renders the listing for a terminal.
func (p Page) Text() []byte {
	var buf bytes.Buffer
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, e := range p.Entries {
		fmt.Fprintf(&buf, "# %s\n", e.Comment)
		fmt.Fprintf(&buf, "name:     %s\n", e.Name)
		fmt.Fprintf(&buf, "runtime:  %s\n", e.Runtime)
		fmt.Fprintf(&buf, "phase:    %s\n", e.Phase)
		fmt.Fprintf(&buf, "active:   %t\n", e.Active)
		fmt.Fprintf(&buf, "url:      %s\n", dash(e.URL))
		fmt.Fprintf(&buf, "cron:     %s\n", dash(e.Cron))
		fmt.Fprintf(&buf, "created:  %s\n", e.Created)
		fmt.Fprintf(&buf, "built:    %s\n", dash(e.Built))
		fmt.Fprintf(&buf, "message:  %s\n\n", dash(oneLine(e.Message)))
	}
	fmt.Fprintf(&buf, "-- namespace %s: %d function%s\n", p.Namespace, len(p.Entries), Plural(len(p.Entries)))
	return buf.Bytes()
}

// oneLine keeps a multi-line message (a build error) on its line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Plural is "s" unless n is 1.
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
