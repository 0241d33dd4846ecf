package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
)

// newTrigger renders t as the API shows it, with what its type's row says
// people see: the function's URL for a trigger its workload serves, the
// next run of an enabled scheduled one.
func (s *Server) newTrigger(t domain.Trigger) wire.Trigger {
	v := wire.Trigger{Namespace: t.Namespace, Name: t.Name, Type: t.Type, Function: t.Function,
		Schedule: t.Schedule, Enabled: t.Enabled, Active: t.Active, CreatedAt: pgTime(t.CreatedAt)}
	info, _ := t.Type.Info()
	if info.Workload {
		v.URL = s.functionURL(t.Namespace, t.Function)
	}
	if info.Scheduled {
		if sched, err := domain.ParseCron(t.Schedule); err == nil && t.Enabled {
			v.NextRunAt = optionalTime(sched.Next(s.cfg.Now()))
		}
	}
	return v
}

// functionURL is where the proxy serves a function (SPEC §3).
func (s *Server) functionURL(ns, function string) string {
	return s.cfg.ExternalURL + "/fn/" + ns + "/" + function
}

func (s *Server) registerTriggerRoutes(g *echo.Group) {
	g.GET("/triggers", s.listTriggers)
	g.POST("/triggers", s.createTrigger)
	g.GET("/triggers/:name", s.getTrigger)
	g.PATCH("/triggers/:name", s.patchTrigger)
	g.DELETE("/triggers/:name", s.deleteTrigger)
}

// listTriggers serves GET /v1/namespaces/{ns}/triggers[?function=f].
func (s *Server) listTriggers(c echo.Context) error {
	fn, ok := functionFilter(c)
	if !ok {
		return c.JSON(http.StatusOK, wire.TriggerList{Triggers: []wire.Trigger{}})
	}
	ts, err := s.cfg.Store.ListTriggers(c.Request().Context(), c.Param("ns"), fn)
	if err != nil {
		return err
	}
	out := wire.TriggerList{Triggers: make([]wire.Trigger, len(ts))}
	for i, t := range ts {
		out.Triggers[i] = s.newTrigger(t)
	}
	return c.JSON(http.StatusOK, out)
}

// createTrigger serves POST /v1/namespaces/{ns}/triggers: 201 with the
// trigger, 409 when the name exists, 422 when the function does not exist
// (command.CreateTrigger).
func (s *Server) createTrigger(c echo.Context) error {
	var req wire.CreateTriggerRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	spec := domain.TriggerSpec{Type: string(req.Type), Function: req.Function, Schedule: req.Schedule, Enabled: true}
	if req.Enabled != nil {
		spec.Enabled = *req.Enabled
	}
	t, err := s.cmd.CreateTrigger(c.Request().Context(), metadata(c), command.CreateTriggerInput{Namespace: c.Param("ns"), Name: req.Name, Spec: spec})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s.newTrigger(t))
}

// getTrigger serves GET /v1/namespaces/{ns}/triggers/{name}.
func (s *Server) getTrigger(c echo.Context) error {
	name, err := nameParam(c, "trigger")
	if err != nil {
		return err
	}
	t, err := s.cfg.Store.GetTrigger(c.Request().Context(), c.Param("ns"), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.newTrigger(t))
}

// patchTrigger serves PATCH /v1/namespaces/{ns}/triggers/{name}
// {"enabled": bool}: switches the trigger on or off; the workload follows
// asynchronously, which "active" reports (command.SetTriggerEnabled).
func (s *Server) patchTrigger(c echo.Context) error {
	ref, err := pathRef(c, "trigger")
	if err != nil {
		return err
	}
	var req wire.PatchTriggerRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Enabled == nil {
		return domain.FieldErrorf("enabled", "is required (true or false)")
	}
	t, err := s.cmd.SetTriggerEnabled(c.Request().Context(), metadata(c), ref, *req.Enabled)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.newTrigger(t))
}

// deleteTrigger serves DELETE /v1/namespaces/{ns}/triggers/{name}
// (command.DeleteTrigger).
func (s *Server) deleteTrigger(c echo.Context) error {
	ref, err := pathRef(c, "trigger")
	if err != nil {
		return err
	}
	if err := s.cmd.DeleteTrigger(c.Request().Context(), metadata(c), ref); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
