package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
)

// newVersion renders v as the API shows it, active when it is version
// active, with its build log when withLog.
func newVersion(v domain.Version, active int, withLog bool) wire.Version {
	env := v.Config.EnvVars
	if env == nil {
		env = map[string]string{}
	}
	out := wire.Version{
		Version: v.Number, Digest: v.Digest, BuildStatus: v.BuildStatus, Image: v.Image, Message: v.Message,
		Active: v.Number == active,
		Config: wire.Config{Runtime: string(v.Config.Runtime), Entrypoint: v.Config.Entrypoint,
			MemoryMB: v.Config.MemoryMB, TimeoutSec: v.Config.TimeoutSec, EnvVars: env, MaxConcurrency: v.Config.MaxConcurrency,
			RetrySafe: v.Config.RetrySafe},
		CreatedAt: pgTime(v.CreatedAt), BuiltAt: optionalTime(v.BuiltAt),
	}
	if withLog {
		out.BuildLog = &v.BuildLog
	}
	return out
}

func (s *Server) registerVersionRoutes(g *echo.Group) {
	g.GET("/functions/:name/versions", s.listVersions)
	g.GET("/functions/:name/versions/:version", s.getVersion)
	g.POST("/functions/:name/rollback", s.rollback)
}

// listVersions serves GET /v1/namespaces/{ns}/functions/{name}/versions.
func (s *Server) listVersions(c echo.Context) error {
	ns, ctx := c.Param("ns"), c.Request().Context()
	name, err := nameParam(c, "function")
	if err != nil {
		return err
	}
	f, err := s.cfg.Store.GetFunction(ctx, ns, name)
	if err != nil {
		return err
	}
	vs, err := s.cfg.Store.ListVersions(ctx, ns, name)
	if err != nil {
		return err
	}
	as, err := s.cfg.Store.ListActivations(ctx, ns, name)
	if err != nil {
		return err
	}
	out := wire.VersionList{Function: name, ActiveVersion: f.ActiveVersion,
		Versions: make([]wire.Version, len(vs)), Activations: make([]wire.Activation, len(as))}
	for i, v := range vs {
		out.Versions[i] = newVersion(v, f.ActiveVersion, false)
	}
	for i, a := range as {
		out.Activations[i] = wire.Activation(a)
	}
	return c.JSON(http.StatusOK, out)
}

// getVersion serves GET /v1/namespaces/{ns}/functions/{name}/versions/{n},
// with the build log.
func (s *Server) getVersion(c echo.Context) error {
	ns, ctx := c.Param("ns"), c.Request().Context()
	name, err := nameParam(c, "function")
	if err != nil {
		return err
	}
	n, err := intParam("version", c.Param("version"))
	if err != nil {
		return err
	}
	f, err := s.cfg.Store.GetFunction(ctx, ns, name)
	if err != nil {
		return err
	}
	v, err := s.cfg.Store.GetVersion(ctx, ns, name, int(n))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newVersion(v, f.ActiveVersion, true))
}

// rollback serves POST /v1/namespaces/{ns}/functions/{name}/rollback
// {"version": n} (command.Rollback): 200 with the function, or 202 when the
// version's lost build was queued again instead (roll back once it is built).
func (s *Server) rollback(c echo.Context) error {
	ref, err := pathRef(c, "function")
	if err != nil {
		return err
	}
	var req wire.RollbackRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	f, requeued, err := s.cmd.Rollback(c.Request().Context(), metadata(c), command.RollbackInput{Ref: ref, Version: req.Version})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if requeued {
		status = http.StatusAccepted
	}
	return c.JSON(status, newFunction(f))
}
