package client

import (
	"context"
	"net/url"

	"github.com/slessio/sless/httpapi/wire"
)

// Trigger runs a function on HTTP requests or a cron schedule (SPEC §3).
type Trigger = wire.Trigger

// CreateTriggerRequest is the body of CreateTrigger; Enabled nil means true.
type CreateTriggerRequest = wire.CreateTriggerRequest

// ListTriggers returns the namespace's triggers, only function's when it is
// not "".
func (c *Client) ListTriggers(ctx context.Context, function string) ([]Trigger, error) {
	var out wire.TriggerList
	var q url.Values
	if function != "" {
		q = url.Values{"function": {function}}
	}
	if _, err := c.do(ctx, call{route: routeListTriggers, query: q, out: &out}); err != nil {
		return nil, err
	}
	return out.Triggers, nil
}

// CreateTrigger creates an http or cron trigger. Errors: *Error with
// CodeConflict when the name exists, CodeUnprocessable (Field "function")
// when the function does not, CodeInvalid naming the Field of a bad type,
// name or schedule.
func (c *Client) CreateTrigger(ctx context.Context, req CreateTriggerRequest) (*Trigger, error) {
	return jsonOf[Trigger](ctx, c, routeCreateTrigger, req)
}

// GetTrigger returns one trigger. Errors: *Error with CodeNotFound.
func (c *Client) GetTrigger(ctx context.Context, name string) (*Trigger, error) {
	return jsonOf[Trigger](ctx, c, routeGetTrigger, nil, name)
}

// SetTriggerEnabled turns a trigger on or off; the workload follows
// asynchronously, as Trigger.Active reports. Errors: *Error with CodeNotFound.
func (c *Client) SetTriggerEnabled(ctx context.Context, name string, enabled bool) (*Trigger, error) {
	return jsonOf[Trigger](ctx, c, routePatchTrigger, wire.PatchTriggerRequest{Enabled: &enabled}, name)
}

// DeleteTrigger deletes a trigger. Errors: *Error with CodeNotFound.
func (c *Client) DeleteTrigger(ctx context.Context, name string) error {
	_, err := c.doJSON(ctx, routeDeleteTrigger, nil, nil, name)
	return err
}
