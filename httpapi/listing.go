package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/listing"
)

// Response formats of the function listing.
const (
	formatJSON = "application/json"
	formatText = "text/plain"
	formatHTML = "text/html"
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

// renderListing writes the human listing of SPEC §7 (package listing) as
// text or HTML. Hidden functions are left out.
func (s *Server) renderListing(c echo.Context, ns string, fs []domain.Function, format string) error {
	page, err := s.listing(c.Request().Context(), ns, fs)
	if err != nil {
		return err
	}
	if format == formatHTML {
		var buf bytes.Buffer
		if err := listingHTML.Execute(&buf, page); err != nil {
			return fmt.Errorf("render listing: %w", err)
		}
		return c.HTMLBlob(http.StatusOK, buf.Bytes())
	}
	return c.Blob(http.StatusOK, echo.MIMETextPlainCharsetUTF8, page.Text())
}

// listing builds the human listing of namespace ns from its functions fs.
func (s *Server) listing(ctx context.Context, ns string, fs []domain.Function) (listing.Page, error) {
	ts, err := s.cfg.Store.ListTriggers(ctx, ns, "")
	if err != nil {
		return listing.Page{}, err
	}
	return listing.Build(ns, fs, ts, s.functionURL, s.hidden), nil
}

// listingHTML renders the listing for a browser; html/template escapes
// every value, so names and build messages cannot inject markup.
var listingHTML = template.Must(template.New("listing").Funcs(template.FuncMap{"plural": listing.Plural}).Parse(`<!doctype html>
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
