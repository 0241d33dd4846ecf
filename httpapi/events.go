package httpapi

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
)

// Paging of the audit log.
const (
	defaultEventLimit = 100
	maxEventLimit     = 1000
)

// streamKinds are the aggregate kinds a ?stream= shorthand may name.
var streamKinds = map[string]bool{"function": true, "trigger": true, "job": true, "namespace": true}

func (s *Server) registerEventRoutes(g *echo.Group) {
	g.GET("/events", s.listEvents)
}

// listEvents serves GET /v1/namespaces/{ns}/events?stream=&after=&limit=:
// the namespace's events in order (type, data, actor, time). stream is a
// stream id ("function:{ns}/hello") or its shorthand ("function/hello");
// after is a position (exclusive); limit is 1 to 1000 (default 100).
func (s *Server) listEvents(c echo.Context) error {
	ns := c.Param("ns")
	stream, err := streamFilter(ns, c.QueryParam("stream"))
	if err != nil {
		return err
	}
	var after int64
	if raw := c.QueryParam("after"); raw != "" {
		if after, err = intParam("after", raw); err != nil {
			return err
		}
	}
	limit := int64(defaultEventLimit)
	if raw := c.QueryParam("limit"); raw != "" {
		if limit, err = intParam("limit", raw); err != nil {
			return err
		}
		if limit < 1 || limit > maxEventLimit {
			return domain.FieldErrorf("limit", "must be between 1 and %d", maxEventLimit)
		}
	}
	evs, err := s.cfg.Store.ReadNamespace(c.Request().Context(), ns, stream, after, int(limit))
	if err != nil {
		return err
	}
	out := wire.EventList{Events: make([]wire.Event, len(evs)), NextAfter: after}
	for i, e := range evs {
		out.Events[i] = wire.Event{Position: e.Position, Stream: e.StreamID, StreamVersion: e.StreamVersion, Type: e.Type,
			Data: e.Data, Actor: e.Metadata.Actor, RequestID: e.Metadata.RequestID, RecordedAt: e.RecordedAt.UTC()}
		out.NextAfter = e.Position
	}
	return c.JSON(http.StatusOK, out)
}

// maxStreamFilter caps ?stream=: the longest stream id is far shorter.
const maxStreamFilter = 256

// streamFilter turns ?stream= into a stream id of namespace ns ("" for all).
// A full id of another namespace simply matches nothing; one that is not
// text (a NUL, which PostgreSQL cannot hold) is EINVALID.
func streamFilter(ns, raw string) (string, error) {
	if err := domain.ValidateText("stream", raw, maxStreamFilter); err != nil {
		return "", err
	}
	if raw == "" || strings.Contains(raw, ":") {
		return raw, nil
	}
	kind, name, ok := strings.Cut(raw, "/")
	if !ok || !streamKinds[kind] || (kind != "namespace" && name == "") {
		return "", domain.FieldErrorf("stream", "%q must be a stream id or kind/name (function/hello, trigger/web, job/once)", raw)
	}
	if kind == "namespace" {
		return domain.NamespaceStream(ns), nil
	}
	return kind + ":" + ns + "/" + name, nil
}
