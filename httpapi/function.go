package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/workers"
)

// newFunction renders f as the API shows it.
func newFunction(f domain.Function) wire.Function {
	env := f.Config.EnvVars
	if env == nil {
		env = map[string]string{}
	}
	return wire.Function{
		Namespace: f.Namespace, Name: f.Name, Runtime: string(f.Config.Runtime), Entrypoint: f.Config.Entrypoint,
		MemoryMB: f.Config.MemoryMB, TimeoutSec: f.Config.TimeoutSec, EnvVars: env, MaxConcurrency: f.Config.MaxConcurrency,
		RetrySafe: f.Config.RetrySafe, Phase: f.Phase, Message: f.Message, ActiveVersion: f.ActiveVersion,
		ServingVersion: f.ServingVersion,
		CreatedAt:      pgTime(f.CreatedAt), LastBuiltAt: optionalTime(f.LastBuiltAt),
	}
}

// optionalTime renders a zero time as JSON null.
func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = pgTime(t)
	return &t
}

// pgTime is t as the read models keep it (UTC, microseconds), so an answer
// rendered from an aggregate equals what a later GET reads.
func pgTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// mergeUpdate returns the spec of cur with the fields of r over it. When the
// runtime changes and the entrypoint was the old runtime's default and is not
// given, the new runtime's default follows (handler.handle means nothing in Go).
func mergeUpdate(r wire.UpdateFunctionRequest, cur domain.FunctionConfig) domain.FunctionSpec {
	spec := domain.FunctionSpec{Runtime: string(cur.Runtime), Entrypoint: cur.Entrypoint,
		MemoryMB: cur.MemoryMB, TimeoutSec: cur.TimeoutSec, EnvVars: cur.EnvVars, MaxConcurrency: cur.MaxConcurrency,
		RetrySafe: cur.RetrySafe}
	if r.Runtime != nil && *r.Runtime != spec.Runtime {
		if cur.Entrypoint == domain.DefaultEntrypoint(cur.Runtime) {
			spec.Entrypoint = ""
		}
		spec.Runtime = *r.Runtime
	}
	if r.Entrypoint != nil {
		spec.Entrypoint = *r.Entrypoint
	}
	if r.MemoryMB != nil {
		spec.MemoryMB = *r.MemoryMB
	}
	if r.TimeoutSec != nil {
		spec.TimeoutSec = *r.TimeoutSec
	}
	if r.EnvVars != nil {
		spec.EnvVars = *r.EnvVars
	}
	if r.MaxConcurrency != nil {
		spec.MaxConcurrency = *r.MaxConcurrency
	}
	if r.RetrySafe != nil {
		spec.RetrySafe = *r.RetrySafe
	}
	return spec
}

func (s *Server) registerFunctionRoutes(g *echo.Group) {
	g.GET("/functions", s.listFunctions)
	g.POST("/functions", s.createFunction)
	g.GET("/functions/:name", s.getFunction)
	g.PUT("/functions/:name", s.updateFunction)
	g.DELETE("/functions/:name", s.deleteFunction)
}

// listFunctions serves GET /v1/namespaces/{ns}/functions: JSON, or the human
// listing of SPEC §7 when the Accept header prefers text/plain or text/html.
func (s *Server) listFunctions(c echo.Context) error {
	ns := c.Param("ns")
	fs, err := s.cfg.Store.ListFunctions(c.Request().Context(), ns)
	if err != nil {
		return err
	}
	c.Response().Header().Add(echo.HeaderVary, "Accept")
	if format := negotiate(c.Request().Header.Get(echo.HeaderAccept)); format != formatJSON {
		return s.renderListing(c, ns, fs, format)
	}
	out := wire.FunctionList{Functions: make([]wire.Function, len(fs))}
	for i, f := range fs {
		out.Functions[i] = newFunction(f)
	}
	return c.JSON(http.StatusOK, out)
}

// createFunction serves POST /v1/namespaces/{ns}/functions: 201 with the new
// function, 409 when the name exists. It also ensures the namespace, so the
// operators' tenant list includes every namespace that has functions.
func (s *Server) createFunction(c echo.Context) error {
	var req wire.CreateFunctionRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ns := c.Param("ns")
	spec := domain.FunctionSpec{Runtime: req.Runtime, Entrypoint: req.Entrypoint, MemoryMB: req.MemoryMB,
		TimeoutSec: req.TimeoutSec, EnvVars: req.EnvVars, MaxConcurrency: req.MaxConcurrency,
		RetrySafe: req.RetrySafe}
	now := s.now()
	var f *domain.Function
	_, err := s.cfg.Store.Execute(c.Request().Context(), metadata(c), func(tx *store.Tx) error {
		f = domain.NewFunction(ns, req.Name)
		if err := ensureNamespace(c, tx, ns, now); err != nil {
			return err
		}
		stream := domain.FunctionStream(ns, req.Name)
		if err := tx.Load(c.Request().Context(), stream, f); err != nil {
			return err
		}
		evs, err := f.Create(spec, now)
		if err != nil {
			return err
		}
		return tx.Append(c.Request().Context(), stream, f, evs)
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, newFunction(*f))
}

// getFunction serves GET /v1/namespaces/{ns}/functions/{name}.
func (s *Server) getFunction(c echo.Context) error {
	f, err := s.cfg.Store.GetFunction(c.Request().Context(), c.Param("ns"), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newFunction(f))
}

// updateFunction serves PUT /v1/namespaces/{ns}/functions/{name}: the given
// fields are merged over the current configuration (wire.UpdateFunctionRequest);
// when code exists a changed configuration makes a new version, built unless
// the same code was built for the same runtime and entrypoint already.
func (s *Server) updateFunction(c echo.Context) error {
	var req wire.UpdateFunctionRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ns, name := c.Param("ns"), c.Param("name")
	if req.Name != nil && *req.Name != name {
		return domain.FieldErrorf("name", "%q differs from the function %q in the path; functions cannot be renamed", *req.Name, name)
	}
	now := s.now()
	var f *domain.Function
	_, err := s.cfg.Store.Execute(c.Request().Context(), metadata(c), func(tx *store.Tx) error {
		f = domain.NewFunction(ns, name)
		stream := domain.FunctionStream(ns, name)
		if err := tx.Load(c.Request().Context(), stream, f); err != nil {
			return err
		}
		evs, err := f.UpdateConfig(mergeUpdate(req, f.Config), now)
		if err != nil {
			return err
		}
		return appendFunction(c, tx, f, evs)
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newFunction(*f))
}

// deleteFunction serves DELETE /v1/namespaces/{ns}/functions/{name}: the
// function, its versions and its triggers go in one transaction; a cleanup
// job removes workloads, schedules and stored code. Jobs stay (history).
func (s *Server) deleteFunction(c echo.Context) error {
	ns, name := c.Param("ns"), c.Param("name")
	ctx := c.Request().Context()
	now := s.now()
	_, err := s.cfg.Store.Execute(ctx, metadata(c), func(tx *store.Tx) error {
		// Locked as trigger creation locks it: a trigger created meanwhile is
		// either seen and deleted here, or refused for a missing function.
		if err := tx.Lock(ctx, domain.FunctionStream(ns, name)); err != nil {
			return err
		}
		f := domain.NewFunction(ns, name)
		if err := tx.Load(ctx, domain.FunctionStream(ns, name), f); err != nil {
			return err
		}
		evs, err := f.Delete(now)
		if err != nil {
			return err
		}
		if err := appendFunction(c, tx, f, evs); err != nil {
			return err
		}
		triggers, err := tx.ListTriggers(ctx, ns, name)
		if err != nil {
			return err
		}
		for _, t := range triggers {
			if err := deleteTrigger(c, tx, ns, t.Name, now); err != nil && domain.ErrorCode(err) != domain.ENOTFOUND {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// appendFunction appends evs to f's stream with the jobs they cause, chosen
// once the events are folded into f (workers.FunctionJobs needs the new state).
func appendFunction(c echo.Context, tx *store.Tx, f *domain.Function, evs []domain.Event) error {
	stream := domain.FunctionStream(f.Namespace, f.Name)
	if err := tx.Append(c.Request().Context(), stream, f, evs); err != nil {
		return err
	}
	return tx.Append(c.Request().Context(), stream, f, nil, workers.FunctionJobs(f, evs)...)
}

// loadExistingFunction loads a function another aggregate refers to; a
// missing one is EUNPROCESSABLE naming the field, because the request is
// well-formed but names nothing that exists (404 would suggest a wrong URL).
func loadExistingFunction(c echo.Context, tx *store.Tx, ns, name string) (*domain.Function, error) {
	if err := tx.Lock(c.Request().Context(), domain.FunctionStream(ns, name)); err != nil {
		return nil, err
	}
	f := domain.NewFunction(ns, name)
	if err := tx.Load(c.Request().Context(), domain.FunctionStream(ns, name), f); err != nil {
		return nil, err
	}
	if !f.Exists {
		return nil, &domain.Error{Code: domain.EUNPROCESSABLE, Field: "function",
			Message: "function: " + name + " does not exist in this namespace; create it first"}
	}
	return f, nil
}
