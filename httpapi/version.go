package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/workers"
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
	ns, name := c.Param("ns"), c.Param("name")
	ctx := c.Request().Context()
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
	ns, name := c.Param("ns"), c.Param("name")
	ctx := c.Request().Context()
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
// {"version": n}: version n, which must have been built successfully (422
// otherwise, 404 when unknown), becomes active again without a rebuild, with
// its configuration; a rollout is queued. It answers the function (200). A
// version still waiting for a build whose job was lost has it queued again
// instead (202; roll back once it is built).
func (s *Server) rollback(c echo.Context) error {
	var req wire.RollbackRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Version < 1 {
		return domain.FieldErrorf("version", "is required and must be 1 or more")
	}
	ns, name := c.Param("ns"), c.Param("name")
	ctx := c.Request().Context()
	now := s.now()
	var f *domain.Function
	var requeued bool
	_, err := s.cfg.Store.Execute(ctx, metadata(c), func(tx *store.Tx) error {
		f = domain.NewFunction(ns, name)
		if err := tx.Load(ctx, domain.FunctionStream(ns, name), f); err != nil {
			return err
		}
		var err error
		if requeued, err = requeueLostBuild(c, tx, f, req.Version); err != nil || requeued {
			return err
		}
		evs, err := f.Rollback(req.Version, now)
		if err != nil {
			return err
		}
		return appendFunction(c, tx, f, evs)
	})
	if err != nil {
		return err
	}
	if requeued {
		return c.JSON(http.StatusAccepted, newFunction(*f))
	}
	return c.JSON(http.StatusOK, newFunction(*f))
}

// requeueLostBuild queues the build of version n of f again when the version
// still waits for one (Queued or Building) but no build job will run it: the
// job was discarded, cancelled or deleted, so nothing else ever would. It
// reports whether it queued one; a build under way is left alone.
func requeueLostBuild(c echo.Context, tx *store.Tx, f *domain.Function, n int) (bool, error) {
	if !f.NeedsBuild(n) {
		return false, nil
	}
	return tx.Requeue(c.Request().Context(), workers.BuildArgs{Namespace: f.Namespace, Function: f.Name, Version: n, Incarnation: f.Incarnation})
}
