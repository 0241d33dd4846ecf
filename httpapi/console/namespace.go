package console

import (
	"net/http"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/listing"
	"github.com/slessio/sless/store"
)

// Chart of a card: the last 24 hours, one bar per hour.
const (
	chartBuckets = 24
	chartWidth   = time.Hour
)

// namespacesView is the operators' list of namespaces.
type namespacesView struct {
	Namespaces []store.NamespaceInfo
	Functions  int
}

// namespacesPage serves an operator's GET /console/: every namespace with
// its function count, each linking to its page.
func (c *Console) namespacesPage(w http.ResponseWriter, r *http.Request, s session) error {
	nss, err := c.cfg.Store.ListNamespaces(r.Context())
	if err != nil {
		return err
	}
	v := namespacesView{Namespaces: nss}
	for _, n := range nss {
		v.Functions += n.Functions
	}
	c.renderView(w, r, http.StatusOK, "namespaces", view{Title: "Namespaces", Session: &s, Page: v})
	return nil
}

// namespaceView is a namespace page: a card per function and a summary.
type namespaceView struct {
	Namespace string
	// Owner is how the namespace's user is called (the session's name or
	// subject), shown with the namespace's hash; "" for an operator
	// reading another namespace, whose user the session does not know.
	Owner string
	// Own says the viewer may change things here (an operator reading a
	// tenant's namespace may not).
	Own     bool
	CSRF    string
	Cards   []card
	Summary summary
}

// nsNav is the navigation of a namespace's pages: Current is the page
// shown, functions or secrets.
type nsNav struct{ Namespace, Current string }

// card is one function of the namespace page. BuildFailure is as on the
// function's page (buildFailure).
type card struct {
	listing.Entry
	Chart        chart
	BuildFailure string
}

// summary counts a namespace's functions by phase.
type summary struct {
	Total, Active, Ready, Building, Pending, Failed int
}

// namespacePage serves GET /console/{ns}: the functions as cards sorted
// active first, then by name (the listing's order), with their triggers'
// switches and a chart of the last 24 hours of invocations.
func (c *Console) namespacePage(w http.ResponseWriter, r *http.Request, s session) error {
	ctx, ns := r.Context(), r.PathValue("ns")
	if !domain.IsNamespace(ns) {
		return domain.Errorf(domain.ENOTFOUND, "there is no namespace %q", ns)
	}
	fs, err := c.cfg.Store.ListFunctions(ctx, ns)
	if err != nil {
		return err
	}
	ts, err := c.cfg.Store.ListTriggers(ctx, ns, "")
	if err != nil {
		return err
	}
	head, err := c.cfg.Store.NamespaceHead(ctx, ns)
	if err != nil {
		return err
	}
	since := c.cfg.Now().UTC().Truncate(chartWidth).Add(-(chartBuckets - 1) * chartWidth)
	hist, err := c.cfg.Store.InvocationHistogram(ctx, ns, since, chartWidth, chartBuckets)
	if err != nil {
		return err
	}
	page := listing.Build(ns, fs, ts, c.cfg.FunctionURL, c.cfg.Hidden)
	v := namespaceView{Namespace: ns, Own: ns == s.Namespace, CSRF: s.CSRF}
	title := ns
	if v.Own {
		v.Owner = s.DisplayName()
		title = v.Owner + " · " + ns
	}
	for _, e := range page.Entries {
		v.Cards = append(v.Cards, card{Entry: e, Chart: newChart(hist[e.Name], since), BuildFailure: buildFailure(e.Function)})
		v.Summary.Total++
		if e.Active {
			v.Summary.Active++
		}
		switch e.Function.Phase {
		case domain.PhaseReady:
			v.Summary.Ready++
		case domain.PhaseBuilding:
			v.Summary.Building++
		case domain.PhasePending:
			v.Summary.Pending++
		case domain.PhaseFailed:
			v.Summary.Failed++
		}
	}
	c.renderView(w, r, http.StatusOK, "namespace", view{Title: title, Session: &s, Live: "/console/" + ns + "/live",
		Cursor: head.String(), Page: v})
	return nil
}

// setTrigger serves POST /console/{ns}/triggers/{trigger} with the form
// field enabled=true|false (command.SetTriggerEnabled), then goes back to
// the page named by the field back.
func (c *Console) setTrigger(w http.ResponseWriter, r *http.Request, s session) error {
	var enabled bool
	switch r.PostFormValue("enabled") {
	case "true":
		enabled = true
	case "false":
	default:
		return domain.FieldErrorf("enabled", "must be true or false")
	}
	ns, name := r.PathValue("ns"), r.PathValue("trigger")
	if _, err := c.cfg.Commands.SetTriggerEnabled(r.Context(), metadata(s), refOf(ns, name), enabled); err != nil {
		return err
	}
	c.back(w, r, "/console/"+ns)
	return nil
}

// back redirects to the console page the form's field back names, or to
// fallback when it names none (never to another site).
func (c *Console) back(w http.ResponseWriter, r *http.Request, fallback string) {
	to := r.PostFormValue("back")
	if !isConsolePath(to) {
		to = fallback
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}
