package client

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"time"
)

// Event is one entry of the namespace's audit log.
type Event struct {
	// Position orders every event of the server; EventQuery.After takes it.
	Position int64 `json:"position"`
	// Stream is the aggregate's stream id, e.g. "function:{ns}/hello".
	Stream        string          `json:"stream"`
	StreamVersion int64           `json:"stream_version"`
	Type          string          `json:"type"`
	Data          json.RawMessage `json:"data"`
	Actor         string          `json:"actor"`
	RequestID     string          `json:"request_id,omitempty"`
	RecordedAt    time.Time       `json:"recorded_at"`
}

// EventQuery filters and pages ListEvents; zero fields filter nothing.
type EventQuery struct {
	// Stream is a stream id or its shorthand kind/name ("function/hello",
	// "trigger/web", "job/once", "namespace/").
	Stream string
	// After is a position: only later events (the NextAfter of the previous page).
	After int64
	// Limit is the page size, 1 to 1000 (the server's default is 100).
	Limit int
}

// EventPage is a page of the audit log, oldest first.
type EventPage struct {
	Events []Event `json:"events"`
	// NextAfter is the EventQuery.After of the next page; a page with no
	// events returns the After it was given.
	NextAfter int64 `json:"next_after"`
}

// ListEvents returns a page of the namespace's audit log. Errors: *Error
// with CodeInvalid naming the Field of a bad stream, after or limit.
func (c *Client) ListEvents(ctx context.Context, q EventQuery) (*EventPage, error) {
	v := url.Values{}
	if q.Stream != "" {
		v.Set("stream", q.Stream)
	}
	if q.After != 0 {
		v.Set("after", strconv.FormatInt(q.After, 10))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out EventPage
	if _, err := c.do(ctx, call{route: routeListEvents, query: v, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
