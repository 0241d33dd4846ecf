package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/store"
)

func (s *Server) registerNamespaceRoutes(g *echo.Group) {
	g.POST("/ensure", s.ensureNamespace)
}

// ensureNamespace serves POST /v1/namespaces/{ns}/ensure: 201 the first time,
// 200 after (idempotent, as the Terraform provider calls it on every run).
func (s *Server) ensureNamespace(c echo.Context) error {
	ns := c.Param("ns")
	now := s.now()
	evs, err := s.cfg.Store.Execute(c.Request().Context(), metadata(c), func(tx *store.Tx) error {
		return ensureNamespace(c, tx, ns, now)
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if len(evs) > 0 {
		status = http.StatusCreated
	}
	return c.JSON(status, wire.Namespace{Namespace: ns, Created: len(evs) > 0})
}

// ensureNamespace records the namespace in tx unless it exists.
func ensureNamespace(c echo.Context, tx *store.Tx, ns string, now time.Time) error {
	n := &domain.Namespace{Name: ns}
	stream := domain.NamespaceStream(ns)
	if err := tx.Load(c.Request().Context(), stream, n); err != nil {
		return err
	}
	evs, err := n.Ensure(now)
	if err != nil {
		return err
	}
	return tx.Append(c.Request().Context(), stream, n, evs)
}

// listNamespaces serves GET /v1/namespaces (operators only): every ensured
// namespace with its number of functions.
func (s *Server) listNamespaces(c echo.Context) error {
	ns, err := s.cfg.Store.ListNamespaces(c.Request().Context())
	if err != nil {
		return err
	}
	out := wire.NamespaceList{Namespaces: make([]wire.NamespaceInfo, len(ns))}
	for i, n := range ns {
		out.Namespaces[i] = wire.NamespaceInfo(n)
	}
	return c.JSON(http.StatusOK, out)
}
