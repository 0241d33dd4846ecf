package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
)

// readyTimeout bounds each readiness probe of a dependency.
const readyTimeout = 3 * time.Second

// healthView is the answer of /healthz and /readyz.
type healthView struct {
	Status string `json:"status"`
	// Sandbox is Config.Sandbox: how function processes are isolated.
	Sandbox string `json:"sandbox" doc:"how function processes are isolated, e.g. bubblewrap, kubernetes or none (unknown when not configured)"`
}

// healthz serves GET /healthz: the process is up and serving (liveness).
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, healthView{Status: "ok", Sandbox: s.cfg.Sandbox})
}

// readyz serves GET /readyz: 200 when PostgreSQL and the object store both
// answer, 503 (EUNAVAILABLE naming the one that does not) otherwise. Both
// answers of health and readiness name the sandbox (Config.Sandbox).
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), readyTimeout)
	defer cancel()
	if err := s.cfg.Store.Ping(ctx); err != nil {
		return domain.Errorf(domain.EUNAVAILABLE, "not ready: database: %s", domain.ErrorMessage(err))
	}
	if err := s.cfg.Code.Ping(ctx); err != nil {
		return domain.Errorf(domain.EUNAVAILABLE, "not ready: object storage: %s", domain.ErrorMessage(err))
	}
	return c.JSON(http.StatusOK, healthView{Status: "ready", Sandbox: s.cfg.Sandbox})
}
