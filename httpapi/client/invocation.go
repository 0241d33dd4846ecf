package client

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"github.com/slessio/sless/httpapi/wire"
)

// Invocation is one recorded run of a function: an HTTP request, a cron
// slot or a job run (SPEC §5).
type Invocation = wire.Invocation

// InvocationDetail is one invocation with the function's log of it.
type InvocationDetail = wire.InvocationDetail

// InvocationQuery filters ListInvocations; zero fields filter nothing.
type InvocationQuery struct {
	// Since and Until bound the start time: Since <= started < Until.
	Since, Until time.Time
	// Status is a status ("504"), a class ("5xx"), "ok" (below 400) or
	// "error" (400 and above).
	Status string
	// Limit is the page size, 1 to 1000 (the server's default is 100).
	Limit int
	// Cursor is the NextCursor of the previous page.
	Cursor string
}

// InvocationPage is a page of the invocation log, newest first; its
// NextCursor is the InvocationQuery.Cursor of the next page, "" on the last.
type InvocationPage = wire.InvocationList

// ListInvocations returns a page of a function's invocation log. Errors:
// *Error with CodeNotFound, CodeInvalid naming the Field of a bad filter.
func (c *Client) ListInvocations(ctx context.Context, function string, q InvocationQuery) (*InvocationPage, error) {
	v := url.Values{}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.Format(time.RFC3339Nano))
	}
	if q.Status != "" {
		v.Set("status", q.Status)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	var out InvocationPage
	if _, err := c.do(ctx, call{route: routeListInvocations, params: []string{function}, query: v, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetInvocation returns one invocation of function with its log. Errors:
// *Error with CodeNotFound.
func (c *Client) GetInvocation(ctx context.Context, function, id string) (*InvocationDetail, error) {
	return jsonOf[InvocationDetail](ctx, c, routeGetInvocation, nil, function, id)
}
