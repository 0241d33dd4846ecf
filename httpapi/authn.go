package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/auth"
)

const principalKey = "sless.principal"

// authenticate verifies the Bearer token and stores the caller's Principal;
// a missing or bad token is EUNAUTHORIZED (401 with WWW-Authenticate).
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		raw, err := auth.BearerToken(c.Request().Header.Get(echo.HeaderAuthorization))
		if err != nil {
			return err
		}
		p, err := s.cfg.Verifier.Verify(c.Request().Context(), raw)
		if err != nil {
			return err
		}
		c.Set(principalKey, p)
		return next(c)
	}
}

// principalOf returns the caller authenticate verified (zero outside /v1).
func principalOf(c echo.Context) auth.Principal {
	p, _ := c.Get(principalKey).(auth.Principal)
	return p
}

// errForbiddenNamespace is the same for every foreign namespace, existing or
// not, so a tenant learns nothing about the others; it names the caller's own
// namespace, the one the URL should have.
func errForbiddenNamespace(own string) error {
	return domain.Errorf(domain.EFORBIDDEN, "this token grants access to its own namespace %s only; use /v1/namespaces/%s/...", own, own)
}

// authorizeNamespace lets a request on /v1/namespaces/{ns}/... through when
// {ns} is the caller's namespace, or when an operator only reads it (GET);
// anything else is EFORBIDDEN.
func authorizeNamespace(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := principalOf(c)
		if c.Param("ns") == p.Namespace || (p.Admin && isRead(c.Request().Method)) {
			return next(c)
		}
		return errForbiddenNamespace(p.Namespace)
	}
}

func isRead(method string) bool { return method == http.MethodGet || method == http.MethodHead }

// requireAdmin admits operators only (EFORBIDDEN for tenants).
func requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !principalOf(c).Admin {
			return domain.Errorf(domain.EFORBIDDEN, "this route is for operators only")
		}
		return next(c)
	}
}
