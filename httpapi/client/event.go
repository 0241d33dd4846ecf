package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/slessio/sless/httpapi/wire"
)

// Event is one entry of the namespace's audit log; its Position is what
// EventQuery.After takes.
type Event = wire.Event

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

// EventPage is a page of the audit log, oldest first; its NextAfter is the
// EventQuery.After of the next page (a page with no events returns the After
// it was given).
type EventPage = wire.EventList

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
