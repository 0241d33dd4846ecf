package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/workers"
)

// jobView is a one-shot job as the API shows it (SPEC §4): Message holds the
// result of a successful run or the error of a failed one, Output all of it.
type jobView struct {
	Namespace   string          `json:"namespace"`
	Name        string          `json:"name"`
	Function    string          `json:"function"`
	Event       json.RawMessage `json:"event"`
	RunID       int64           `json:"run_id"`
	Phase       string          `json:"phase"`
	Version     int             `json:"version"`
	Message     string          `json:"message"`
	Output      string          `json:"output"`
	StartedAt   *time.Time      `json:"started_at"`
	CompletedAt *time.Time      `json:"completed_at"`
	CreatedAt   time.Time       `json:"created_at"`
}

func newJobView(j domain.Job) jobView {
	event := j.Event
	if len(event) == 0 {
		event = json.RawMessage(`{}`)
	}
	return jobView{Namespace: j.Namespace, Name: j.Name, Function: j.Function, Event: event, RunID: j.RunID,
		Phase: string(j.Phase), Version: j.Version, Message: j.Message, Output: j.Output,
		StartedAt: optionalTime(j.StartedAt), CompletedAt: optionalTime(j.CompletedAt), CreatedAt: pgTime(j.CreatedAt)}
}

// jobList is the answer of GET .../jobs.
type jobList struct {
	Jobs []jobView `json:"jobs"`
}

// createJobRequest is the body of POST .../jobs; run_id 0 creates the job
// without running it.
type createJobRequest struct {
	Name     string          `json:"name"`
	Function string          `json:"function"`
	Event    json.RawMessage `json:"event,omitempty"`
	RunID    int64           `json:"run_id,omitempty"`
}

// patchJobRequest is the body of PATCH .../jobs/{name}.
type patchJobRequest struct {
	RunID *int64 `json:"run_id"`
}

func (s *Server) registerJobRoutes(g *echo.Group) {
	g.GET("/jobs", s.listJobs)
	g.POST("/jobs", s.createJob)
	g.GET("/jobs/:name", s.getJob)
	g.PATCH("/jobs/:name", s.patchJob)
	g.DELETE("/jobs/:name", s.deleteJob)
}

// listJobs serves GET /v1/namespaces/{ns}/jobs[?function=f].
func (s *Server) listJobs(c echo.Context) error {
	js, err := s.cfg.Store.ListJobs(c.Request().Context(), c.Param("ns"), c.QueryParam("function"))
	if err != nil {
		return err
	}
	out := jobList{Jobs: make([]jobView, len(js))}
	for i, j := range js {
		out.Jobs[i] = newJobView(j)
	}
	return c.JSON(http.StatusOK, out)
}

// createJob serves POST /v1/namespaces/{ns}/jobs: 201 with the job (its run
// queued when run_id > 0), 409 when the name exists (the client reads it
// back with GET), 422 when the function does not exist.
func (s *Server) createJob(c echo.Context) error {
	var req createJobRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ns := c.Param("ns")
	ctx := c.Request().Context()
	now := s.now()
	var j *domain.Job
	_, err := s.cfg.Store.Execute(ctx, metadata(c), func(tx *store.Tx) error {
		j = domain.NewJob(ns, req.Name)
		stream := domain.JobStream(ns, req.Name)
		if err := tx.Load(ctx, stream, j); err != nil {
			return err
		}
		evs, err := j.Create(domain.JobSpec{Function: req.Function, Event: req.Event, RunID: req.RunID}, now)
		if err != nil {
			return err
		}
		if _, err := loadExistingFunction(c, tx, ns, req.Function); err != nil {
			return err
		}
		return tx.Append(ctx, stream, j, evs, workers.RunJobs(j, evs)...)
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, newJobView(*j))
}

// getJob serves GET /v1/namespaces/{ns}/jobs/{name}.
func (s *Server) getJob(c echo.Context) error {
	j, err := s.cfg.Store.GetJob(c.Request().Context(), c.Param("ns"), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newJobView(j))
}

// patchJob serves PATCH /v1/namespaces/{ns}/jobs/{name} {"run_id": n}: a
// larger n runs the job again (202), the same n changes nothing (200), a
// smaller one is 400; the function must still exist (422).
func (s *Server) patchJob(c echo.Context) error {
	var req patchJobRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.RunID == nil {
		return domain.FieldErrorf("run_id", "is required")
	}
	ns, name := c.Param("ns"), c.Param("name")
	ctx := c.Request().Context()
	now := s.now()
	var j *domain.Job
	evs, err := s.cfg.Store.Execute(ctx, metadata(c), func(tx *store.Tx) error {
		j = domain.NewJob(ns, name)
		stream := domain.JobStream(ns, name)
		if err := tx.Load(ctx, stream, j); err != nil {
			return err
		}
		evs, err := j.SetRunID(*req.RunID, now)
		if err != nil || len(evs) == 0 {
			return err
		}
		if _, err := loadExistingFunction(c, tx, ns, j.Function); err != nil {
			return err
		}
		return tx.Append(ctx, stream, j, evs, workers.RunJobs(j, evs)...)
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if len(evs) > 0 {
		status = http.StatusAccepted
	}
	return c.JSON(status, newJobView(*j))
}

// deleteJob serves DELETE /v1/namespaces/{ns}/jobs/{name}: the job goes, and
// its unfinished runs are cancelled.
func (s *Server) deleteJob(c echo.Context) error {
	ns, name := c.Param("ns"), c.Param("name")
	ctx := c.Request().Context()
	now := s.now()
	_, err := s.cfg.Store.Execute(ctx, metadata(c), func(tx *store.Tx) error {
		j := domain.NewJob(ns, name)
		stream := domain.JobStream(ns, name)
		if err := tx.Load(ctx, stream, j); err != nil {
			return err
		}
		evs, err := j.Delete(now)
		if err != nil {
			return err
		}
		if err := tx.Append(ctx, stream, j, evs); err != nil {
			return err
		}
		// A run still going is stopped once this commits, and recorded as
		// cancelled.
		return workers.CancelRunTx(ctx, tx.Tx, ns, name)
	})
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
