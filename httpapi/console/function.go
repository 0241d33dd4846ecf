package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/console/highlight"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore"
)

// Sizes of a function page.
const (
	invocationPage = 20
	eventHistory   = 50
	// maxHighlighted bounds the source shown highlighted; a larger file is
	// shown as plain text.
	maxHighlighted = 256 << 10
)

// ranges are the invocation log's time filters.
var ranges = []struct{ Key, Label string }{{"1h", "last hour"}, {"24h", "last 24 hours"}, {"7d", "last 7 days"}, {"", "all"}}

// functionView is a function page.
type functionView struct {
	Namespace, Name string
	Own             bool
	CSRF            string
	Function        domain.Function
	URL             string
	Env             []keyValue
	Secrets         []secretRef
	Metrics         metricsView
	Triggers        []domain.Trigger
	Versions        []versionRow
	Source          sourceView
	Log             logView
	Jobs            []domain.Job
	Async           asyncView
	Scale           scaleView
	Events          []eventRow

	// BuildFailure is the newest version's failed build when the phase
	// does not already say it ("v2 — first line"), "" otherwise.
	BuildFailure string
	// Invoke shows the invoke panel: the owner's, on a server that runs functions.
	Invoke bool
}

type keyValue struct{ Key, Value string }

// versionRow is a line of the versions table. CanRollback offers to make
// it active: "Rollback" to an older version, "Activate" for a newer one
// (Newer: a version built after the active one, e.g. after a rollback).
type versionRow struct {
	domain.Version
	Active, CanRollback, Newer bool
	ActivatedBy, ActivatedAt   string
}

// sourceView is the source viewer: the files of one version, one of them shown.
type sourceView struct {
	Version  int
	Versions []int
	Files    []string
	File     string
	Language string
	Binary   bool
	Size     int
	Lines    []highlight.Line
	Missing  string // why there is nothing to show
}

// logView is a page of the invocation log with its filters.
type logView struct {
	Invocations []store.Invocation
	Errors      bool
	Since       string
	Ranges      []struct{ Key, Label string }
	Next        string // the address (?query) of the next page, "" on the last
}

// eventRow is a line of the function's event history; Summary says what
// it means when its payload does not (eventSummary).
type eventRow struct {
	Position int64
	Type     string
	Actor    string
	At       time.Time
	Data     string
	Summary  string
}

// functionPage serves GET /console/{ns}/functions/{fn}[?version=&file=&errors=&since=&cursor=&dead=].
func (c *Console) functionPage(w http.ResponseWriter, r *http.Request, s session) error {
	ctx, ns, name := r.Context(), r.PathValue("ns"), r.PathValue("fn")
	if !domain.IsNamespace(ns) || !domain.IsName(name) {
		return domain.Errorf(domain.ENOTFOUND, "there is no function %q", name)
	}
	f, err := c.cfg.Store.GetFunction(ctx, ns, name)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	v := functionView{Namespace: ns, Name: name, Own: ns == s.Namespace, CSRF: s.CSRF, Function: f, BuildFailure: buildFailure(f)}
	v.Invoke = v.Own && c.cfg.Invoker != nil
	v.Scale = c.newScaleView(f)
	for k, val := range f.Config.EnvVars {
		v.Env = append(v.Env, keyValue{k, val})
	}
	slices.SortFunc(v.Env, func(a, b keyValue) int { return strings.Compare(a.Key, b.Key) })
	if v.Secrets, err = c.functionSecrets(r, f); err != nil {
		return err
	}
	if v.Metrics, err = c.metricsView(r, ns, name); err != nil {
		return err
	}
	if v.Triggers, err = c.cfg.Store.ListTriggers(ctx, ns, name); err != nil {
		return err
	}
	for _, t := range v.Triggers {
		if info, _ := t.Type.Info(); info.Workload { // served at the function's URL
			v.URL = c.cfg.FunctionURL(ns, name)
		}
	}
	versions, err := c.cfg.Store.ListVersions(ctx, ns, name)
	if err != nil {
		return err
	}
	if v.Versions, err = c.versionRows(r, f, versions); err != nil {
		return err
	}
	if v.Source, err = c.sourceView(r, f, versions, q.Get("version"), q.Get("file")); err != nil {
		return err
	}
	if v.Log, err = c.logView(r, ns, name, q); err != nil {
		return err
	}
	if v.Jobs, err = c.cfg.Store.ListJobs(ctx, ns, name); err != nil {
		return err
	}
	if v.Async, err = c.asyncView(r, f, q.Get("dead")); err != nil {
		return err
	}
	if v.Events, err = c.eventRows(r, ns, name); err != nil {
		return err
	}
	head, err := c.cfg.Store.NamespaceHead(ctx, ns)
	if err != nil {
		return err
	}
	c.renderView(w, r, http.StatusOK, "function", view{Title: name + " · " + ns, Session: &s, Live: "/console/" + ns + "/live",
		Cursor: head.String(), Page: v})
	return nil
}

// versionRows are the versions, newest first, with who activated each last.
func (c *Console) versionRows(r *http.Request, f domain.Function, versions []domain.Version) ([]versionRow, error) {
	acts, err := c.cfg.Store.ListActivations(r.Context(), f.Namespace, f.Name)
	if err != nil {
		return nil, err
	}
	rows := make([]versionRow, 0, len(versions))
	for _, ver := range versions {
		row := versionRow{Version: ver, Active: ver.Number == f.ActiveVersion, Newer: ver.Number > f.ActiveVersion}
		row.CanRollback = !row.Active && ver.BuildStatus == domain.BuildStatusSucceeded
		for _, a := range acts { // newest first: the first match is the last activation
			if a.Version == ver.Number {
				row.ActivatedBy, row.ActivatedAt = a.Actor, when(a.ActivatedAt)
				break
			}
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b versionRow) int { return b.Number - a.Number })
	return rows, nil
}

// sourceView reads the files of the chosen version (default: the active
// one, else the newest) and highlights the chosen file (default: the
// entrypoint's module, else the first).
func (c *Console) sourceView(r *http.Request, f domain.Function, versions []domain.Version, rawVersion, file string) (sourceView, error) {
	var sv sourceView
	for _, ver := range versions {
		sv.Versions = append(sv.Versions, ver.Number)
	}
	slices.Sort(sv.Versions)
	slices.Reverse(sv.Versions)
	sv.Version = f.ActiveVersion
	if sv.Version == 0 && len(sv.Versions) > 0 {
		sv.Version = sv.Versions[0]
	}
	if rawVersion != "" {
		n, err := strconv.Atoi(rawVersion)
		if err != nil || !slices.Contains(sv.Versions, n) {
			return sv, domain.FieldErrorf("version", "%q is not a version of this function", rawVersion)
		}
		sv.Version = n
	}
	i := slices.IndexFunc(versions, func(v domain.Version) bool { return v.Number == sv.Version })
	if i < 0 {
		sv.Missing = "No code has been uploaded yet."
		return sv, nil
	}
	ver := versions[i]
	files, err := c.cfg.Code.Source(r.Context(), ver.ZipKey)
	if err != nil {
		return sv, err
	}
	if len(files) == 0 {
		sv.Missing = "This version has no files."
		return sv, nil
	}
	chosen := -1
	for i, sf := range files {
		sv.Files = append(sv.Files, sf.Name)
		if sf.Name == file {
			chosen = i
		}
	}
	if file != "" && chosen < 0 {
		return sv, domain.FieldErrorf("file", "version %d has no file %q", sv.Version, file)
	}
	if chosen < 0 {
		chosen = entrypointFile(files, ver.Config)
	}
	sf := files[chosen]
	sv.File, sv.Binary, sv.Size = sf.Name, sf.Binary, len(sf.Content)
	if sf.Binary {
		return sv, nil
	}
	sv.Language = highlight.Language(sf.Name, sf.Content)
	if len(sf.Content) > maxHighlighted { // plain lines: no lexer runs over it
		sv.Language = "plaintext"
		sv.Lines = highlight.PlainLines(sf.Content)
		return sv, nil
	}
	sv.Lines = highlight.Lines(sf.Name, sf.Content)
	return sv, nil
}

// entrypointFile is the index of the file the entrypoint names (main.handler
// → main.py, main.js or main.go), else 0.
func entrypointFile(files []codestore.SourceFile, cfg domain.FunctionConfig) int {
	module, _, _ := strings.Cut(cfg.Entrypoint, ".")
	for i, f := range files {
		if base, _, _ := strings.Cut(f.Name, "."); module != "" && base == module {
			return i
		}
	}
	return 0
}

// logView reads a page of the invocation log with the query's filters.
func (c *Console) logView(r *http.Request, ns, name string, q url.Values) (logView, error) {
	lv := logView{Errors: q.Get("errors") == "1", Since: q.Get("since"), Ranges: ranges}
	iq := store.InvocationQuery{Namespace: ns, Function: name, Limit: invocationPage, Cursor: q.Get("cursor")}
	switch lv.Since {
	case "1h":
		iq.Since = c.cfg.Now().Add(-time.Hour)
	case "24h":
		iq.Since = c.cfg.Now().Add(-24 * time.Hour)
	case "7d":
		iq.Since = c.cfg.Now().Add(-7 * 24 * time.Hour)
	case "":
	default:
		return lv, domain.FieldErrorf("since", "must be one of 1h, 24h, 7d or empty")
	}
	if lv.Errors {
		iq.StatusMin = 500
	}
	page, err := c.cfg.Store.ListInvocations(r.Context(), iq)
	if err != nil {
		return lv, err
	}
	lv.Invocations = page.Invocations
	if page.NextCursor != "" {
		next := url.Values{"cursor": {page.NextCursor}}
		if lv.Errors {
			next.Set("errors", "1")
		}
		if lv.Since != "" {
			next.Set("since", lv.Since)
		}
		lv.Next = "?" + next.Encode()
	}
	return lv, nil
}

// eventRows is the function stream's history, newest first.
func (c *Console) eventRows(r *http.Request, ns, name string) ([]eventRow, error) {
	evs, err := c.cfg.Store.ReadStream(r.Context(), domain.FunctionStream(ns, name), 1)
	if err != nil {
		return nil, err
	}
	if len(evs) > eventHistory {
		evs = evs[len(evs)-eventHistory:]
	}
	rows := make([]eventRow, 0, len(evs))
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		rows = append(rows, eventRow{Position: e.Position, Type: e.Type, Actor: e.Metadata.Actor, At: e.RecordedAt, Data: string(e.Data),
			Summary: eventSummary(e.Type, e.Data)})
	}
	return rows, nil
}

// invocationPage serves GET /console/{ns}/functions/{fn}/invocations/{id}:
// one record with its captured output (the log page leaves outputs out;
// the page's script loads this one into a row that is opened).
func (c *Console) invocationPage(w http.ResponseWriter, r *http.Request, s session) error {
	ns, name := r.PathValue("ns"), r.PathValue("fn")
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return domain.Errorf(domain.ENOTFOUND, "there is no invocation %q", r.PathValue("id"))
	}
	inv, err := c.cfg.Store.GetInvocation(r.Context(), ns, name, id)
	if err != nil {
		return err
	}
	c.renderView(w, r, http.StatusOK, "invocation", view{Title: "invocation of " + name, Session: &s, Page: inv})
	return nil
}

// rollback serves POST /console/{ns}/functions/{fn}/rollback with the form
// field version (command.Rollback).
func (c *Console) rollback(w http.ResponseWriter, r *http.Request, s session) error {
	ns, name := r.PathValue("ns"), r.PathValue("fn")
	n, err := strconv.Atoi(r.PostFormValue("version"))
	if err != nil || n < 1 {
		return domain.FieldErrorf("version", "must be a version number")
	}
	if _, _, err := c.cfg.Commands.Rollback(r.Context(), metadata(s), command.RollbackInput{Ref: refOf(ns, name), Version: n}); err != nil {
		return err
	}
	http.Redirect(w, r, "/console/"+ns+"/functions/"+name, http.StatusSeeOther)
	return nil
}

// invoke serves POST /console/{ns}/functions/{fn}/invoke, the invoke
// panel's call (a script's, with the CSRF token in its header): the body is
// the function's event, the answer the function's — through the proxy's
// Invoke, as the API's POST .../invoke, recorded with trigger kind api. The
// function gets the body and its Content-Type only: none of the console's
// cookies or tokens.
func (c *Console) invoke(w http.ResponseWriter, r *http.Request, s session) error {
	if c.cfg.Invoker == nil {
		return domain.Errorf(domain.EUNAVAILABLE, "this server runs no functions")
	}
	out := r.Clone(r.Context())
	out.Header = http.Header{}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		out.Header.Set("Content-Type", ct)
	}
	return c.cfg.Invoker.ServeInvoke(noCookies{w}, out, r.PathValue("ns"), r.PathValue("fn"), store.InvocationAPI)
}

// noCookies drops the Set-Cookie headers of an answer to the invoke panel:
// the browser that shows it is the console's, and must not store cookies a
// function sets (for /console/, over the session's). The panel shows the
// body; the function's headers are the API's invoke's to see.
type noCookies struct{ http.ResponseWriter }

func (w noCookies) WriteHeader(code int) {
	w.Header().Del("Set-Cookie")
	w.ResponseWriter.WriteHeader(code)
}

func (w noCookies) Write(b []byte) (int, error) {
	w.Header().Del("Set-Cookie")
	return w.ResponseWriter.Write(b)
}

// Unwrap lets the proxy flush and hijack the server's writer.
func (w noCookies) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// buildFailure is "v2 — <first line of its message>" when the newest
// version's build failed and the function's phase does not say so already
// (it says what serves: Ready while an older version does), else "".
func buildFailure(f domain.Function) string {
	b := f.LastBuildFailure
	if b.Version == 0 || f.Phase == domain.PhaseFailed && f.Message == b.Message {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(b.Message), "\n")
	if line = strings.TrimSpace(line); line == "" {
		return "v" + strconv.Itoa(b.Version)
	}
	return "v" + strconv.Itoa(b.Version) + " — " + line
}

// metadata is what the events a console user causes record.
func metadata(s session) store.Metadata { return store.Metadata{Actor: s.Subject} }

func refOf(ns, name string) command.Ref { return command.Ref{Namespace: ns, Name: name} }

// isConsolePath reports whether p is a path of this console (not //host or
// a scheme), safe to redirect to.
func isConsolePath(p string) bool {
	return strings.HasPrefix(p, "/console/") && !strings.ContainsAny(p, "\\\r\n") && !strings.HasPrefix(p, "//")
}
