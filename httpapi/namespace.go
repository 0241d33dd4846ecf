package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/httpapi/wire"
)

func (s *Server) registerNamespaceRoutes(g *echo.Group) {
	g.POST("/ensure", s.ensureNamespace)
}

// ensureNamespace serves POST /v1/namespaces/{ns}/ensure: 201 the first time,
// 200 after (command.EnsureNamespace).
func (s *Server) ensureNamespace(c echo.Context) error {
	ns := c.Param("ns")
	created, err := s.cmd.EnsureNamespace(c.Request().Context(), metadata(c), ns)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, wire.Namespace{Namespace: ns, Created: created})
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
