package httpapi

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/console"
)

// newConsole builds the web console on the server's store and commands.
func (s *Server) newConsole() (*console.Console, error) {
	return console.New(console.Config{Store: s.cfg.Store, Code: s.cfg.Code, Commands: s.cmd, Verifier: s.cfg.Verifier,
		FunctionURL: s.functionURL, Invoker: s.cfg.Proxy, Instances: s.instances, Hidden: s.hidden, RiverUI: s.cfg.RiverUI != nil,
		LivePoll: s.cfg.ConsoleLivePoll, Logger: s.log.With("component", "console"), Now: s.cfg.Now})
}

// serveConsole sends /console/ to the console, except the plain-text
// listing: GET /console/{ns} with an Accept that lacks text/html is the
// SPEC §7 listing for curl, authorised by Bearer token like /funcs/{ns}.
func (s *Server) serveConsole(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/console/")
	if r.Method == http.MethodGet && rest != "" && !strings.Contains(rest, "/") && rest != "_" && !acceptsHTML(r) {
		s.echo.ServeHTTP(w, r)
		return
	}
	s.console.ServeHTTP(w, r)
}

// acceptsHTML reports whether the request's Accept names text/html (as a
// browser's navigation does); curl's */* does not.
func acceptsHTML(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/html")
}

// textListing serves the plain-text listing of GET /funcs/{ns} and GET
// /console/{ns} (SPEC §7); a browser asking /funcs/{ns} for HTML is sent to
// the console's page of the namespace.
func (s *Server) textListing(c echo.Context) error {
	ns := c.Param("ns")
	if acceptsHTML(c.Request()) {
		return c.Redirect(http.StatusSeeOther, "/console/"+ns)
	}
	fs, err := s.cfg.Store.ListFunctions(c.Request().Context(), ns)
	if err != nil {
		return err
	}
	c.Response().Header().Add(echo.HeaderVary, "Accept")
	return s.renderListing(c, ns, fs, formatText)
}

// authenticateOperator admits a Bearer token or, for the River UI's own
// pages, scripts and styles (which a browser loads without the header), an
// operator's console session.
func (s *Server) authenticateOperator(next echo.HandlerFunc) echo.HandlerFunc {
	bearer := s.authenticate(next)
	return func(c echo.Context) error {
		if c.Request().Header.Get(echo.HeaderAuthorization) != "" {
			return bearer(c)
		}
		p, err := s.console.RiverUIPrincipal(c.Request())
		if err != nil {
			if domain.ErrorCode(err) == domain.EUNAUTHORIZED && c.Request().Method == http.MethodGet && acceptsHTML(c.Request()) {
				return c.Redirect(http.StatusSeeOther, "/console/")
			}
			return err
		}
		c.Set(principalKey, p)
		return next(c)
	}
}
