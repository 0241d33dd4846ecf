package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/workers"
)

// functionView is a function as the API shows it (SPEC §2).
type functionView struct {
	Namespace  string            `json:"namespace"`
	Name       string            `json:"name"`
	Runtime    string            `json:"runtime"`
	Entrypoint string            `json:"entrypoint"`
	MemoryMB   int               `json:"memory_mb"`
	TimeoutSec int               `json:"timeout_sec"`
	EnvVars    map[string]string `json:"env_vars"`
	// MaxConcurrency is how many requests the function serves at once
	// through /fn (429 beyond); 0 means the platform's default.
	MaxConcurrency int `json:"max_concurrency"`
	// RetrySafe is domain.FunctionConfig.RetrySafe: whether a job run
	// interrupted by a server shutdown is run again.
	RetrySafe     bool       `json:"retry_safe" doc:"true: a job run interrupted by a server shutdown is run again; false (default): it fails with \"interrupted by shutdown\""`
	Phase         string     `json:"phase"`
	Message       string     `json:"message"`
	ActiveVersion int        `json:"active_version"`
	CreatedAt     time.Time  `json:"created_at"`
	LastBuiltAt   *time.Time `json:"last_built_at"`
}

func newFunctionView(f domain.Function) functionView {
	env := f.Config.EnvVars
	if env == nil {
		env = map[string]string{}
	}
	return functionView{
		Namespace: f.Namespace, Name: f.Name, Runtime: string(f.Config.Runtime), Entrypoint: f.Config.Entrypoint,
		MemoryMB: f.Config.MemoryMB, TimeoutSec: f.Config.TimeoutSec, EnvVars: env, MaxConcurrency: f.Config.MaxConcurrency,
		RetrySafe: f.Config.RetrySafe, Phase: string(f.Phase), Message: f.Message, ActiveVersion: f.ActiveVersion,
		CreatedAt: pgTime(f.CreatedAt), LastBuiltAt: optionalTime(f.LastBuiltAt),
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

// functionList is the JSON answer of the function listing.
type functionList struct {
	Functions []functionView `json:"functions"`
}

// createFunctionRequest is the body of POST .../functions; zero values take
// the defaults of SPEC §2 (memory_mb 128, timeout_sec 30, the runtime's entrypoint).
type createFunctionRequest struct {
	Name       string            `json:"name"`
	Runtime    string            `json:"runtime"`
	Entrypoint string            `json:"entrypoint,omitempty"`
	MemoryMB   int               `json:"memory_mb,omitempty"`
	TimeoutSec int               `json:"timeout_sec,omitempty"`
	EnvVars    map[string]string `json:"env_vars,omitempty"`
	// MaxConcurrency bounds the requests served at once (0: the platform's default).
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// RetrySafe declares that running the function twice with one event does
	// no harm (default false), see functionView.RetrySafe.
	RetrySafe bool `json:"retry_safe,omitempty" doc:"true: a job run interrupted by a server shutdown is run again; false (default): it fails with \"interrupted by shutdown\""`
}

// updateFunctionRequest is the body of PUT .../functions/{name}. It is merged
// over the current configuration: a field left out (or null) keeps its value,
// env_vars replaces the whole map when given ({} clears it), and 0 for
// memory_mb or timeout_sec means the default, as in a create. name, when
// given, must be the name in the path.
type updateFunctionRequest struct {
	Name           *string            `json:"name,omitempty"`
	Runtime        *string            `json:"runtime,omitempty"`
	Entrypoint     *string            `json:"entrypoint,omitempty"`
	MemoryMB       *int               `json:"memory_mb,omitempty"`
	TimeoutSec     *int               `json:"timeout_sec,omitempty"`
	EnvVars        *map[string]string `json:"env_vars,omitempty"`
	MaxConcurrency *int               `json:"max_concurrency,omitempty"`
	RetrySafe      *bool              `json:"retry_safe,omitempty" doc:"true: a job run interrupted by a server shutdown is run again; false: it fails with \"interrupted by shutdown\""`
}

// merge returns the spec of cur with the request's fields over it. When the
// runtime changes and the entrypoint was the old runtime's default and is not
// given, the new runtime's default follows (handler.handle means nothing in Go).
func (r updateFunctionRequest) merge(cur domain.FunctionConfig) domain.FunctionSpec {
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
	out := functionList{Functions: make([]functionView, len(fs))}
	for i, f := range fs {
		out.Functions[i] = newFunctionView(f)
	}
	return c.JSON(http.StatusOK, out)
}

// createFunction serves POST /v1/namespaces/{ns}/functions: 201 with the new
// function, 409 when the name exists. It also ensures the namespace, so the
// operators' tenant list includes every namespace that has functions.
func (s *Server) createFunction(c echo.Context) error {
	var req createFunctionRequest
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
	return c.JSON(http.StatusCreated, newFunctionView(*f))
}

// getFunction serves GET /v1/namespaces/{ns}/functions/{name}.
func (s *Server) getFunction(c echo.Context) error {
	f, err := s.cfg.Store.GetFunction(c.Request().Context(), c.Param("ns"), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newFunctionView(f))
}

// updateFunction serves PUT /v1/namespaces/{ns}/functions/{name}: the given
// fields are merged over the current configuration (updateFunctionRequest);
// when code exists a changed configuration makes a new version, built unless
// the same code was built for the same runtime and entrypoint already.
func (s *Server) updateFunction(c echo.Context) error {
	var req updateFunctionRequest
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
		evs, err := f.UpdateConfig(req.merge(f.Config), now)
		if err != nil {
			return err
		}
		return appendFunction(c, tx, f, evs)
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newFunctionView(*f))
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
