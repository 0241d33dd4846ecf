package console

import (
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/store"
)

// Cookies of a session: one for the console's pages and one for the River
// UI (which only operators may use); both hold the same session id, and each is sent to its
// own path only, so no function behind /fn/ ever receives either.
const (
	cookieConsole = "sless_console"
	cookieRiverUI = "sless_riverui"
	pathConsole   = "/console/"
	pathRiverUI   = "/riverui/"
	// csrfField is the form field, csrfHeader the header of scripts.
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
)

// session is a signed-in user.
type session struct {
	store.Session
	ID string
}

// DisplayName is how the pages call the user: the token's name claim when
// it had one (store.Session.Name), else its subject.
func (s session) DisplayName() string {
	return auth.Principal{Subject: s.Subject, Name: s.Name}.DisplayName()
}

// session returns the request's session; EUNAUTHORIZED without a valid one.
func (c *Console) session(r *http.Request) (session, error) {
	return c.sessionFrom(r, cookieConsole)
}

func (c *Console) sessionFrom(r *http.Request, cookie string) (session, error) {
	ck, err := r.Cookie(cookie)
	if err != nil || ck.Value == "" {
		return session{}, domain.Errorf(domain.EUNAUTHORIZED, "sign in with your token first")
	}
	s, err := c.cfg.Store.GetSession(r.Context(), ck.Value)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return session{}, domain.Errorf(domain.EUNAUTHORIZED, "your session has ended; sign in again")
	}
	if err != nil {
		return session{}, err
	}
	return session{Session: s, ID: ck.Value}, nil
}

// RiverUIPrincipal returns the operator a request to /riverui/ comes from,
// by its River UI cookie: EUNAUTHORIZED without a session, EFORBIDDEN for a
// tenant or a cross-site state change (the River UI's own scripts send no
// CSRF token, so a state change must at least come from this origin).
func (c *Console) RiverUIPrincipal(r *http.Request) (auth.Principal, error) {
	s, err := c.sessionFrom(r, cookieRiverUI)
	if err != nil {
		return auth.Principal{}, err
	}
	if !s.Admin {
		return auth.Principal{}, domain.Errorf(domain.EFORBIDDEN, "this route is for operators only")
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && (r.Header.Get("Origin") == "" || !sameOrigin(r)) {
		return auth.Principal{}, domain.Errorf(domain.EFORBIDDEN, "a change through the River UI must come from its own page")
	}
	return auth.Principal{Subject: s.Subject, Namespace: s.Namespace, Admin: true, ExpiresAt: s.ExpiresAt}, nil
}

// checkCSRF requires the session's CSRF token (form field or header) and a
// same-origin request.
func checkCSRF(r *http.Request, s session) error {
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) != 1 || !sameOrigin(r) {
		return domain.Errorf(domain.EFORBIDDEN, "this form has expired or did not come from the console; reload the page and try again")
	}
	return nil
}

// home serves GET /console/: the sign-in page, or (with ?token=) signs in and
// redirects to the same address without the token, so it leaves neither the
// address bar nor the history; a signed-in tenant goes to their namespace,
// an operator sees the namespace list.
func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	if tok := r.URL.Query().Get("token"); tok != "" {
		if err := c.signInWith(w, r, tok); err != nil {
			c.renderSignIn(w, r, err)
			return
		}
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	s, err := c.session(r)
	if err != nil {
		c.renderSignIn(w, r, nil)
		return
	}
	if !s.Admin {
		http.Redirect(w, r, "/console/"+s.Namespace, http.StatusSeeOther)
		return
	}
	if err := c.namespacesPage(w, r, s); err != nil {
		c.fail(w, r, err)
	}
}

// signIn serves POST /console/_/signin with the form field token.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !sameOrigin(r) {
		c.fail(w, r, domain.Errorf(domain.EFORBIDDEN, "sign in from the console's own page"))
		return
	}
	if err := c.signInWith(w, r, strings.TrimSpace(r.PostFormValue("token"))); err != nil {
		c.renderSignIn(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// signInWith verifies tok exactly as the API does and starts a session
// ending no later than the token.
func (c *Console) signInWith(w http.ResponseWriter, r *http.Request, tok string) error {
	if tok == "" {
		return domain.Errorf(domain.EUNAUTHORIZED, "paste your token to sign in")
	}
	p, err := c.cfg.Verifier.Verify(r.Context(), tok)
	if err != nil {
		return err
	}
	expires := c.cfg.Now().Add(c.cfg.SessionTTL)
	if !p.ExpiresAt.IsZero() && p.ExpiresAt.Before(expires) {
		expires = p.ExpiresAt
	}
	id, _, err := c.cfg.Store.CreateSession(r.Context(), p.Subject, p.Name, p.Namespace, p.Admin, expires)
	if err != nil {
		return err
	}
	setCookie(w, r, cookieConsole, pathConsole, id, expires)
	// Tenants get it too, so that /riverui/ tells them it is not theirs
	// (403) rather than asking them to sign in.
	setCookie(w, r, cookieRiverUI, pathRiverUI, id, expires)
	return nil
}

// signOut serves POST /console/_/signout: the session ends in the store (so
// a copy of the cookie is refused from now on) and both cookies are cleared.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request, s session) error {
	if err := c.cfg.Store.DeleteSession(r.Context(), s.ID); err != nil {
		return err
	}
	setCookie(w, r, cookieConsole, pathConsole, "", time.Time{})
	setCookie(w, r, cookieRiverUI, pathRiverUI, "", time.Time{})
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
	return nil
}

// setCookie sets (or, with a zero expiry, clears) a session cookie:
// HttpOnly, SameSite=Strict, Secure when served over TLS.
func setCookie(w http.ResponseWriter, r *http.Request, name, path, value string, expires time.Time) {
	ck := &http.Cookie{Name: name, Value: value, Path: path, HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"}
	if expires.IsZero() {
		ck.MaxAge = -1
	} else {
		ck.Expires = expires.UTC()
	}
	http.SetCookie(w, ck)
}

// renderSignIn shows the sign-in form, with the reason of a failed attempt.
func (c *Console) renderSignIn(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusOK, ""
	if err != nil {
		status, msg = http.StatusUnauthorized, domain.ErrorMessage(err)
		if domain.ErrorCode(err) != domain.EUNAUTHORIZED {
			c.fail(w, r, err)
			return
		}
	}
	// A token in the address (a failed ?token= sign-in) stays out of other
	// sites' Referer by the console's Referrer-Policy: same-origin; not
	// no-referrer, which would make the browser send "Origin: null" and
	// the form's POST look cross-site.
	c.render(w, r, status, "signin", signInPage{Error: msg})
}

// signInPage is the data of the sign-in template.
type signInPage struct{ Error string }
