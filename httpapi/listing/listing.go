// Package listing builds the human listing of a namespace (SPEC §7): every
// function with a one-line comment, its state, URL and schedule, active
// functions first and then by name. The API renders it as text or HTML for
// GET .../functions, the console as its namespace page and as the plain-text
// answer of /console/{ns} and /funcs/{ns} for curl.
package listing

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strconv"
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
	page := Page{Namespace: ns, Entries: make([]Entry, 0, len(fs))}
	for _, f := range fs {
		if !hidden[f.Name] {
			page.Entries = append(page.Entries, newEntry(f, byFunction[f.Name], urlOf))
		}
	}
	// By pointer: an Entry holds its whole Function, too large to copy twice per comparison.
	sort.SliceStable(page.Entries, func(i, j int) bool {
		a, b := &page.Entries[i], &page.Entries[j]
		if a.Active != b.Active {
			return a.Active
		}
		return a.Name < b.Name
	})
	return page
}

// newEntry describes f and its triggers, by their types' rows: the URL
// when the workload serves one, the schedules of the scheduled ones, and a
// comment telling of the leading trigger (leads). A function is active when
// one of its enabled triggers has its workload running or scheduled.
func newEntry(f domain.Function, ts []domain.Trigger, urlOf func(ns, function string) string) Entry {
	e := Entry{Name: f.Name, Runtime: string(f.Config.Runtime), Phase: string(f.Phase), Message: f.Message,
		Created: f.CreatedAt.UTC().Format(Time), Function: f, Triggers: ts}
	if !f.LastBuiltAt.IsZero() {
		e.Built = f.LastBuiltAt.UTC().Format(Time)
	}
	var lead *domain.Trigger
	var schedules []string
	for i := range ts {
		t := &ts[i]
		e.Active = e.Active || (t.Enabled && t.Active)
		info, ok := t.Type.Info()
		if !ok {
			continue
		}
		if info.Workload {
			e.URL = urlOf(f.Namespace, f.Name)
		}
		if info.Scheduled {
			schedules = append(schedules, t.Schedule)
		}
		if leads(t, lead) {
			lead = t
		}
	}
	e.Cron = strings.Join(schedules, ", ")
	if lead == nil {
		e.Comment = fmt.Sprintf("Job/runner without trigger (%s) — %s", e.Runtime, e.Phase)
		return e
	}
	word := "inactive"
	switch {
	case e.Active:
		word = "active"
	case !lead.Enabled:
		word = "disabled"
	}
	info, _ := lead.Type.Info()
	e.Comment = fmt.Sprintf("%s (%s) — %s, %s", info.Label(*lead), e.Runtime, e.Phase, word)
	return e
}

// leads reports whether t, rather than lead (nil: none yet), is the trigger
// a function's comment tells of: one of the first type in
// domain.TriggerTypes that the function has. Triggers that the workload
// serves are alike (one URL), so an enabled one leads them; other types'
// triggers differ (each has its schedule), so the first one does.
func leads(t, lead *domain.Trigger) bool {
	if lead == nil {
		return true
	}
	types := domain.TriggerTypes()
	if rank, leadRank := slices.Index(types, t.Type), slices.Index(types, lead.Type); rank != leadRank {
		return rank < leadRank
	}
	info, _ := t.Type.Info()
	return info.Workload && t.Enabled && !lead.Enabled
}

// Text renders the listing for a terminal.
func (p Page) Text() []byte {
	var buf bytes.Buffer
	buf.Grow(256 * (len(p.Entries) + 1))
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	line := func(label, value string) {
		buf.WriteString(label)
		buf.WriteString(value)
		buf.WriteByte('\n')
	}
	for i := range p.Entries {
		e := &p.Entries[i]
		line("# ", e.Comment)
		line("name:     ", e.Name)
		line("runtime:  ", e.Runtime)
		line("phase:    ", e.Phase)
		line("active:   ", strconv.FormatBool(e.Active))
		line("url:      ", dash(e.URL))
		line("cron:     ", dash(e.Cron))
		line("created:  ", e.Created)
		line("built:    ", dash(e.Built))
		line("message:  ", dash(oneLine(e.Message)))
		buf.WriteByte('\n')
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
