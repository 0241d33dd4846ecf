package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/slessio/sless/httpapi/console/highlight"
	"github.com/slessio/sless/httpapi/listing"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed assets
var assetFiles embed.FS

// asset is an embedded file served under a name carrying its content hash,
// so a browser may cache it for good and still sees every new release.
type asset struct {
	name, contentType string
	data              []byte
}

// assets maps a logical name (console.css) to its asset, and served maps the
// hashed name (console.3f2a9c1b.css) to the same.
var assets, served = loadAssets()

func loadAssets() (map[string]*asset, map[string]*asset) {
	byName, byHashed := map[string]*asset{}, map[string]*asset{}
	add := func(name string, data []byte) {
		sum := sha256.Sum256(data)
		ext := path.Ext(name)
		hashed := strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:5]) + ext
		types := map[string]string{".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}
		a := &asset{name: hashed, contentType: types[ext], data: data}
		byName[name], byHashed[hashed] = a, a
	}
	err := fs.WalkDir(assetFiles, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := assetFiles.ReadFile(p)
		add(path.Base(p), data)
		return err
	})
	if err != nil {
		panic(err)
	}
	add("highlight.css", highlight.CSS())
	return byName, byHashed
}

// assetURL is the address of the asset of a logical name.
func assetURL(name string) (string, error) {
	a, ok := assets[name]
	if !ok {
		return "", fmt.Errorf("no asset %q", name)
	}
	return "/console/_/assets/" + a.name, nil
}

// serveAsset serves GET /console/_/assets/{file}, cacheable for a year.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := served[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.data))
}

// pages holds one template set per page, each with the shared layout.
var pages = parsePages()

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"asset":  assetURL,
		"plural": listing.Plural,
		"when":   when,
		"ms":     millis,
		"add":    func(a, b int) int { return a + b },
		"phase":  phaseClass,
		"nsnav":  func(ns, current string) nsNav { return nsNav{Namespace: ns, Current: current} },
	}
	base := template.Must(template.New("layout").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html"))
	out := map[string]*template.Template{}
	entries, err := templateFiles.ReadDir("templates")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".html")
		if name == "layout" {
			continue
		}
		out[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFiles, "templates/"+e.Name()))
	}
	return out
}

// view is what every page's layout shows around its content.
type view struct {
	Title   string
	Session *session
	// Live is the page's event stream (empty for a page that is not live)
	// and Cursor the event-store position the page was rendered at.
	Live, Cursor string
	RiverUI      bool
	Page         any
}

// render writes page name with data as the page's content.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	c.renderView(w, r, status, name, view{Page: data})
}

func (c *Console) renderView(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	v.RiverUI = c.cfg.RiverUI && v.Session != nil && v.Session.Admin
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		c.log.ErrorContext(r.Context(), "console: render", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// when formats a time for a table; the zero time is a dash.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
}

// millis formats a duration in milliseconds.
func millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
}

// phaseClass is the badge class of a function phase (distinct colours for
// Ready, Building, Pending and Failed).
func phaseClass(phase string) string { return "badge badge-" + strings.ToLower(phase) }
