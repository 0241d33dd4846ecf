package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
)

// newFunction renders f as the API shows it.
func newFunction(f domain.Function) wire.Function {
	return wire.Function{
		Namespace: f.Namespace, Name: f.Name, Runtime: string(f.Config.Runtime), Entrypoint: f.Config.Entrypoint,
		MemoryMB: f.Config.MemoryMB, TimeoutSec: f.Config.TimeoutSec, EnvVars: orEmptyMap(f.Config.EnvVars), MaxConcurrency: f.Config.MaxConcurrency,
		RetrySafe: f.Config.RetrySafe, Phase: f.Phase, Message: f.Message, LastBuildFailure: buildFailure(f.LastBuildFailure),
		ActiveVersion: f.ActiveVersion, ServingVersion: f.ServingVersion, Async: newAsyncConfig(f.Config.AsyncPolicy()),
		MinInstances: f.Config.Scale.MinInstances, MaxInstances: f.Config.Scale.MaxInstances, Concurrency: f.Config.Scale.Concurrency,
		Secrets: orEmptyMap(f.Config.Secrets), SecretFiles: orEmpty(f.Config.SecretFiles), SecretVersions: orEmptyMap(f.Config.SecretVersions),
		CreatedAt: pgTime(f.CreatedAt), LastBuiltAt: optionalTime(f.LastBuiltAt),
	}
}

// withWarnings is the answer of a create or an update of f: the function
// and what looks risky in its configuration.
func withWarnings(f domain.Function) wire.Function {
	out := newFunction(f)
	out.Warnings = domain.CredentialEnvWarnings(f.Config.EnvVars)
	return out
}

// orEmpty renders a nil slice as [], not null.
func orEmpty[S ~[]E, E any](s S) S {
	if s == nil {
		return S{}
	}
	return s
}

// orEmptyMap renders a nil map as {}, not null.
func orEmptyMap[M ~map[K]V, K comparable, V any](m M) M {
	if m == nil {
		return M{}
	}
	return m
}

func newAsyncConfig(a domain.AsyncConfig) wire.AsyncConfig {
	return wire.AsyncConfig{MaxRetries: a.MaxRetries, MaxEventAgeSec: a.MaxEventAgeSec, MaxConcurrency: a.MaxConcurrency}
}

// asyncPatchOf is the partial async configuration a request gives; nil when none.
func asyncPatchOf(p *wire.AsyncPatch) *command.AsyncPatch {
	if p == nil {
		return nil
	}
	return &command.AsyncPatch{MaxRetries: p.MaxRetries, MaxEventAgeSec: p.MaxEventAgeSec, MaxConcurrency: p.MaxConcurrency}
}

// buildFailure renders no failure (version 0) as JSON null.
func buildFailure(b domain.BuildFailure) *wire.BuildFailure {
	if b.Version == 0 {
		return nil
	}
	return &wire.BuildFailure{Version: b.Version, Message: b.Message}
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

// patchOf is the partial configuration an update request gives.
func patchOf(r wire.UpdateFunctionRequest) command.FunctionPatch {
	return command.FunctionPatch{Runtime: r.Runtime, Entrypoint: r.Entrypoint, MemoryMB: r.MemoryMB, TimeoutSec: r.TimeoutSec,
		EnvVars: r.EnvVars, MaxConcurrency: r.MaxConcurrency, RetrySafe: r.RetrySafe, Async: asyncPatchOf(r.Async),
		MinInstances: r.MinInstances, MaxInstances: r.MaxInstances, Concurrency: r.Concurrency,
		Secrets: r.Secrets, SecretFiles: r.SecretFiles}
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
// function, 409 when the name exists (command.CreateFunction).
func (s *Server) createFunction(c echo.Context) error {
	var req wire.CreateFunctionRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	f, err := s.cmd.CreateFunction(c.Request().Context(), metadata(c), command.CreateFunctionInput{
		Namespace: c.Param("ns"), Name: req.Name,
		Spec: domain.FunctionSpec{Runtime: req.Runtime, Entrypoint: req.Entrypoint, MemoryMB: req.MemoryMB,
			TimeoutSec: req.TimeoutSec, EnvVars: req.EnvVars, MaxConcurrency: req.MaxConcurrency, RetrySafe: req.RetrySafe,
			Async:   asyncSpec(req.Async),
			Scale:   domain.ScaleConfig{MinInstances: req.MinInstances, MaxInstances: req.MaxInstances, Concurrency: req.Concurrency},
			Secrets: req.Secrets, SecretFiles: req.SecretFiles}})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, withWarnings(f))
}

// getFunction serves GET /v1/namespaces/{ns}/functions/{name}.
func (s *Server) getFunction(c echo.Context) error {
	name, err := nameParam(c, "function")
	if err != nil {
		return err
	}
	f, err := s.cfg.Store.GetFunction(c.Request().Context(), c.Param("ns"), name)
	if err != nil {
		return err
	}
	out := newFunction(f)
	out.Instances = s.instances(f.Namespace, f.Name)
	return c.JSON(http.StatusOK, out)
}

// updateFunction serves PUT /v1/namespaces/{ns}/functions/{name}: the given
// fields are merged over the current configuration (wire.UpdateFunctionRequest,
// command.UpdateFunction).
func (s *Server) updateFunction(c echo.Context) error {
	ref, err := pathRef(c, "function")
	if err != nil {
		return err
	}
	var req wire.UpdateFunctionRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Name != nil && *req.Name != ref.Name {
		return domain.FieldErrorf("name", "%.63q differs from the function %q in the path; functions cannot be renamed", *req.Name, ref.Name)
	}
	f, err := s.cmd.UpdateFunction(c.Request().Context(), metadata(c), command.UpdateFunctionInput{Ref: ref, Patch: patchOf(req)})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, withWarnings(f))
}

// deleteFunction serves DELETE /v1/namespaces/{ns}/functions/{name}: the
// function with its versions, triggers and jobs (command.DeleteFunction).
func (s *Server) deleteFunction(c echo.Context) error {
	ref, err := pathRef(c, "function")
	if err != nil {
		return err
	}
	if err := s.cmd.DeleteFunction(c.Request().Context(), metadata(c), ref); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// refOf names the object of a request's path: {ns} and {name}, as given
// (pathRef checks the name).
func refOf(c echo.Context) command.Ref {
	return command.Ref{Namespace: c.Param("ns"), Name: c.Param("name")}
}

// pathRef is refOf for a name of kind that nameParam accepts (ENOTFOUND otherwise).
func pathRef(c echo.Context, kind string) (command.Ref, error) {
	if _, err := nameParam(c, kind); err != nil {
		return command.Ref{}, err
	}
	return refOf(c), nil
}

// asyncSpec is the async configuration of a create: the given fields over
// the defaults; nil when none is given.
func asyncSpec(p *wire.AsyncPatch) *domain.AsyncConfig {
	if p == nil {
		return nil
	}
	a := asyncPatchOf(p).Over(domain.DefaultAsyncConfig())
	return &a
}
