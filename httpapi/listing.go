package httpapi

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
)

// Response formats of the function listing.
const (
	formatJSON  = "application/json"
	formatText  = "text/plain"
	formatHTML  = "text/html"
	listingTime = "2006-01-02 15:04:05Z07:00"
)

// negotiate picks the listing format the Accept header prefers: the highest
// q-value wins, the most specific media range sets an offer's q, and ties go
// to JSON, then HTML, then text. No header (or */*) means JSON, so API
// clients never get the human listing by accident.
func negotiate(accept string) string {
	offers := []string{formatJSON, formatHTML, formatText}
	best, bestQ := formatJSON, -1.0
	for _, offer := range offers {
		q := acceptQ(accept, offer)
		if q > bestQ {
			best, bestQ = offer, q
		}
	}
	if bestQ <= 0 {
		return formatJSON
	}
	return best
}

// acceptQ is the q-value the Accept header gives offer (1 for no header).
func acceptQ(accept, offer string) float64 {
	if strings.TrimSpace(accept) == "" {
		return 1
	}
	typ, _, _ := strings.Cut(offer, "/")
	q, specificity := 0.0, -1
	for _, r := range strings.Split(accept, ",") {
		params := strings.Split(r, ";")
		mr := strings.ToLower(strings.TrimSpace(params[0]))
		spec := -1
		switch {
		case mr == offer:
			spec = 2
		case mr == typ+"/*":
			spec = 1
		case mr == "*/*":
			spec = 0
		}
		if spec <= specificity {
			continue
		}
		rq := 1.0
		for _, p := range params[1:] {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), "q="); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					rq = f
				}
			}
		}
		q, specificity = rq, spec
	}
	return q
}

// listingEntry is one function of the human listing (SPEC §7).
type listingEntry struct {
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
}

// listingPage is the whole human listing.
type listingPage struct {
	Namespace string
	Entries   []listingEntry
}

// renderListing writes the human listing: every function with a one-line
// comment, its state, URL and schedule; active functions first, then by name;
// a footer with the namespace and the total. Hidden functions are left out.
func (s *Server) renderListing(c echo.Context, ns string, fs []domain.Function, format string) error {
	ts, err := s.cfg.Store.ListTriggers(c.Request().Context(), ns, "")
	if err != nil {
		return err
	}
	byFunction := map[string][]domain.Trigger{}
	for _, t := range ts {
		byFunction[t.Function] = append(byFunction[t.Function], t)
	}
	page := listingPage{Namespace: ns}
	for _, f := range fs {
		if !s.hidden[f.Name] {
			page.Entries = append(page.Entries, s.listingEntry(f, byFunction[f.Name]))
		}
	}
	sort.SliceStable(page.Entries, func(i, j int) bool {
		a, b := page.Entries[i], page.Entries[j]
		if a.Active != b.Active {
			return a.Active
		}
		return a.Name < b.Name
	})
	var buf bytes.Buffer
	if format == formatHTML {
		if err := listingHTML.Execute(&buf, page); err != nil {
			return fmt.Errorf("render listing: %w", err)
		}
		return c.HTMLBlob(http.StatusOK, buf.Bytes())
	}
	writeListingText(&buf, page)
	return c.Blob(http.StatusOK, echo.MIMETextPlainCharsetUTF8, buf.Bytes())
}

// listingEntry describes f and its triggers. A function is active when one
// of its enabled triggers has its workload running or scheduled.
func (s *Server) listingEntry(f domain.Function, ts []domain.Trigger) listingEntry {
	e := listingEntry{Name: f.Name, Runtime: string(f.Config.Runtime), Phase: string(f.Phase), Message: f.Message,
		Created: f.CreatedAt.UTC().Format(listingTime)}
	if !f.LastBuiltAt.IsZero() {
		e.Built = f.LastBuiltAt.UTC().Format(listingTime)
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
		e.URL = s.functionURL(f.Namespace, f.Name)
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

// writeListingText renders the listing for a terminal.
func writeListingText(buf *bytes.Buffer, page listingPage) {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, e := range page.Entries {
		fmt.Fprintf(buf, "# %s\n", e.Comment)
		fmt.Fprintf(buf, "name:     %s\n", e.Name)
		fmt.Fprintf(buf, "runtime:  %s\n", e.Runtime)
		fmt.Fprintf(buf, "phase:    %s\n", e.Phase)
		fmt.Fprintf(buf, "active:   %t\n", e.Active)
		fmt.Fprintf(buf, "url:      %s\n", dash(e.URL))
		fmt.Fprintf(buf, "cron:     %s\n", dash(e.Cron))
		fmt.Fprintf(buf, "created:  %s\n", e.Created)
		fmt.Fprintf(buf, "built:    %s\n", dash(e.Built))
		fmt.Fprintf(buf, "message:  %s\n\n", dash(oneLine(e.Message)))
	}
	fmt.Fprintf(buf, "-- namespace %s: %d function%s\n", page.Namespace, len(page.Entries), plural(len(page.Entries)))
}

// oneLine keeps a multi-line message (a build error) on its line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// listingHTML renders the listing for a browser; html/template escapes
// every value, so names and build messages cannot inject markup.
var listingHTML = template.Must(template.New("listing").Funcs(template.FuncMap{"plural": plural}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sless — {{.Namespace}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.3rem .6rem;border-bottom:1px solid #ddd;vertical-align:top}
tr.comment td{color:#666;font-style:italic;border-bottom:none;padding-top:.8rem}
.active{color:#070}.msg{white-space:pre-wrap;font-family:monospace;font-size:.85em}
</style></head><body>
<h1>Functions in {{.Namespace}}</h1>
<table>
<tr><th>name</th><th>runtime</th><th>phase</th><th>active</th><th>url</th><th>cron</th><th>created</th><th>built</th><th>message</th></tr>
{{range .Entries}}<tr class="comment"><td colspan="9"># {{.Comment}}</td></tr>
<tr><td>{{.Name}}</td><td>{{.Runtime}}</td><td>{{.Phase}}</td><td{{if .Active}} class="active"{{end}}>{{.Active}}</td><td>{{if .URL}}<a href="{{.URL}}">{{.URL}}</a>{{end}}</td><td>{{.Cron}}</td><td>{{.Created}}</td><td>{{.Built}}</td><td class="msg">{{.Message}}</td></tr>
{{end}}</table>
<footer><p>namespace {{.Namespace}}: {{len .Entries}} function{{plural (len .Entries)}}</p></footer>
</body></html>
`))
