package console

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore"
)

// Defaults of Config.
const (
	DefaultSessionTTL = 12 * time.Hour
	DefaultLivePoll   = time.Second
)

// Config wires a Console to the store, the commands and the token verifier.
type Config struct {
	// Store serves the read models, the event log and the sessions. Required.
	Store *store.Store
	// Code reads a version's source files. Required.
	Code *codestore.Store
	// Commands changes state (triggers, rollback, dead letters, scaling), as the REST API does. Required.
	Commands *command.Commands
	// Verifier checks the token a user signs in with. Required.
	Verifier *auth.Verifier
	// FunctionURL is where the proxy serves a function. Required.
	FunctionURL func(ns, function string) string
	// Invoker runs the invoke panel's calls (httpapi/proxy's Invoke, the
	// path of the API's POST .../invoke); nil: no panel.
	Invoker Invoker
	// Instances says what runs of a function now on this server, as the
	// API's function answer does (its instances); nil, or a nil answer:
	// the page says nothing of it.
	Instances func(namespace, function string) *wire.Instances
	// Hidden names functions left out of the namespace page (SPEC §7).
	Hidden map[string]bool
	// RiverUI says whether /riverui/ is served, so operators get a link.
	RiverUI bool
	// SessionTTL caps a session's life (it also ends at the token's expiry);
	// 0 means DefaultSessionTTL.
	SessionTTL time.Duration
	// LivePoll is how often a live page's event stream looks for new events
	// and invocations; 0 means DefaultLivePoll.
	LivePoll time.Duration
	// Logger receives internal errors; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Invoker calls a function for its owner and writes the function's answer
// (httpapi/proxy's *Proxy); an error means nothing was written.
type Invoker interface {
	ServeInvoke(w http.ResponseWriter, r *http.Request, namespace, function string, kind store.TriggerKind) error
}

// Console serves /console/. It is safe for concurrent use.
type Console struct {
	cfg Config
	mux *http.ServeMux
	log *slog.Logger
	// closing is closed by Shutdown, ending the live streams.
	closing  chan struct{}
	shutdown sync.Once
}

// New returns the console for cfg; EINVALID when a required field is missing.
func New(cfg Config) (*Console, error) {
	if cfg.Store == nil || cfg.Code == nil || cfg.Commands == nil || cfg.Verifier == nil || cfg.FunctionURL == nil {
		return nil, domain.Errorf(domain.EINVALID, "console: Store, Code, Commands, Verifier and FunctionURL are required")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.LivePoll <= 0 {
		cfg.LivePoll = DefaultLivePoll
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Console{cfg: cfg, mux: http.NewServeMux(), log: cfg.Logger, closing: make(chan struct{})}
	c.routes()
	return c, nil
}

// Shutdown ends every live stream (a browser reconnects to another server,
// or to this one when it is back, and resumes where it was), so that a
// graceful stop of the HTTP server does not wait for open pages; register it
// with http.Server.RegisterOnShutdown.
func (c *Console) Shutdown() { c.shutdown.Do(func() { close(c.closing) }) }

func (c *Console) routes() {
	m := c.mux
	m.HandleFunc("GET /console/{$}", c.home)
	m.HandleFunc("POST /console/_/signin", c.signIn)
	m.HandleFunc("POST /console/_/signout", c.withSession(c.signOut))
	m.HandleFunc("GET /console/_/assets/{file}", serveAsset)
	m.HandleFunc("GET /console/{ns}", c.reader(c.namespacePage))
	m.HandleFunc("GET /console/{ns}/live", c.reader(c.live))
	m.HandleFunc("GET /console/{ns}/secrets", c.reader(c.secretsPage))
	m.HandleFunc("GET /console/{ns}/functions/{fn}", c.reader(c.functionPage))
	m.HandleFunc("GET /console/{ns}/functions/{fn}/invocations/{id}", c.reader(c.invocationPage))
	m.HandleFunc("POST /console/{ns}/triggers/{trigger}", c.writer(c.setTrigger))
	m.HandleFunc("POST /console/{ns}/functions/{fn}/rollback", c.writer(c.rollback))
	m.HandleFunc("POST /console/{ns}/functions/{fn}/invoke", c.writer(c.invoke))
	m.HandleFunc("POST /console/{ns}/functions/{fn}/scale", c.writer(c.setScale))
	m.HandleFunc("POST /console/{ns}/functions/{fn}/dead-letters/{id}/retry", c.writer(c.retryDeadLetter))
	m.HandleFunc("POST /console/{ns}/functions/{fn}/dead-letters/delete", c.writer(c.deleteDeadLetters))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, domain.Errorf(domain.ENOTFOUND, "there is no console page at %s", r.URL.Path))
	})
}

// ServeHTTP serves every path below /console/ with the console's security headers.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	c.mux.ServeHTTP(w, r)
}

// contentSecurityPolicy allows the console's own scripts, styles and
// requests only: no inline script or style, no frames, no foreign origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// handler serves a request of a signed-in user.
type handler func(w http.ResponseWriter, r *http.Request, s session) error

// withSession admits signed-in users only; a state-changing request also
// needs the session's CSRF token. Without a session a page redirects to the
// sign-in page and anything else is EUNAUTHORIZED.
func (c *Console) withSession(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := c.session(r)
		if err != nil {
			if r.Method == http.MethodGet && domain.ErrorCode(err) == domain.EUNAUTHORIZED {
				http.Redirect(w, r, "/console/", http.StatusSeeOther)
				return
			}
			c.fail(w, r, err)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := checkCSRF(r, s); err != nil {
				c.fail(w, r, err)
				return
			}
		}
		if err := h(w, r, s); err != nil {
			c.fail(w, r, err)
		}
	}
}

// reader admits the namespace's owner and operators (who may read every
// namespace, as in the API).
func (c *Console) reader(h handler) http.HandlerFunc {
	return c.withSession(func(w http.ResponseWriter, r *http.Request, s session) error {
		if ns := r.PathValue("ns"); ns != s.Namespace && !s.Admin {
			return errForeign(s.Namespace)
		}
		return h(w, r, s)
	})
}

// writer admits the namespace's owner only: operators read other
// namespaces but change none, as in the API.
func (c *Console) writer(h handler) http.HandlerFunc {
	return c.withSession(func(w http.ResponseWriter, r *http.Request, s session) error {
		if r.PathValue("ns") != s.Namespace {
			return errForeign(s.Namespace)
		}
		return h(w, r, s)
	})
}

// errForeign is the same for every foreign namespace, existing or not.
func errForeign(own string) error {
	return domain.Errorf(domain.EFORBIDDEN, "you are signed in for namespace %s only; this page belongs to another namespace", own)
}

// fail renders err as an error page with the status of its code; an
// internal error is logged and shown without its details.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errClientGone) {
		return
	}
	code := domain.ErrorCode(err)
	status := wire.StatusOf(code)
	msg := domain.ErrorMessage(err)
	if status >= 500 {
		c.log.ErrorContext(r.Context(), "console: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "something went wrong on our side; the server log has the details"
	}
	c.render(w, r, status, "error", errorPage{Code: code, Message: msg, SignIn: status == http.StatusUnauthorized})
}

// errorPage is the data of the error template.
type errorPage struct {
	Code, Message string
	SignIn        bool
}

// errClientGone marks a stream the browser closed: nothing to render.
var errClientGone = errors.New("client went away")

// sameOrigin reports whether a request's Origin (when the browser sent one)
// is the console's host (the scheme is left out: TLS may end in front of
// sless): the second line of defence against cross-site
// requests after SameSite=Strict.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}
