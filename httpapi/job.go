package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
)

// newJob renders j as the API shows it; a job without an event shows {}.
func newJob(j domain.Job) wire.Job {
	event := j.Event
	if len(event) == 0 {
		event = json.RawMessage(`{}`)
	}
	return wire.Job{Namespace: j.Namespace, Name: j.Name, Function: j.Function, Event: event, RunID: j.RunID,
		Phase: j.Phase, Version: j.Version, Message: j.Message, Output: j.Output,
		StartedAt: optionalTime(j.StartedAt), CompletedAt: optionalTime(j.CompletedAt), CreatedAt: pgTime(j.CreatedAt)}
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
	fn, ok := functionFilter(c)
	if !ok {
		return c.JSON(http.StatusOK, wire.JobList{Jobs: []wire.Job{}})
	}
	js, err := s.cfg.Store.ListJobs(c.Request().Context(), c.Param("ns"), fn)
	if err != nil {
		return err
	}
	out := wire.JobList{Jobs: make([]wire.Job, len(js))}
	for i, j := range js {
		out.Jobs[i] = newJob(j)
	}
	return c.JSON(http.StatusOK, out)
}

// createJob serves POST /v1/namespaces/{ns}/jobs: 201 with the job (its run
// queued when run_id > 0), 409 when the name exists (the client reads it
// back with GET), 422 when the function does not exist (command.CreateJob).
func (s *Server) createJob(c echo.Context) error {
	var req wire.CreateJobRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	j, err := s.cmd.CreateJob(c.Request().Context(), metadata(c), command.CreateJobInput{Namespace: c.Param("ns"), Name: req.Name,
		Spec: domain.JobSpec{Function: req.Function, Event: req.Event, RunID: req.RunID}})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, newJob(j))
}

// getJob serves GET /v1/namespaces/{ns}/jobs/{name}.
func (s *Server) getJob(c echo.Context) error {
	name, err := nameParam(c, "job")
	if err != nil {
		return err
	}
	j, err := s.cfg.Store.GetJob(c.Request().Context(), c.Param("ns"), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newJob(j))
}

// patchJob serves PATCH /v1/namespaces/{ns}/jobs/{name} {"run_id": n}: a
// larger n runs the job again (202), the same n changes nothing (200), a
// smaller one is 400; the function must still exist (422; command.SetJobRunID).
func (s *Server) patchJob(c echo.Context) error {
	ref, err := pathRef(c, "job")
	if err != nil {
		return err
	}
	var req wire.PatchJobRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.RunID == nil {
		return domain.FieldErrorf("run_id", "is required")
	}
	j, started, err := s.cmd.SetJobRunID(c.Request().Context(), metadata(c), ref, *req.RunID)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if started {
		status = http.StatusAccepted
	}
	return c.JSON(status, newJob(j))
}

// deleteJob serves DELETE /v1/namespaces/{ns}/jobs/{name}: the job goes, and
// its unfinished runs are cancelled (command.DeleteJob).
func (s *Server) deleteJob(c echo.Context) error {
	ref, err := pathRef(c, "job")
	if err != nil {
		return err
	}
	if err := s.cmd.DeleteJob(c.Request().Context(), metadata(c), ref); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
