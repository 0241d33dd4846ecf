package client

import (
	"context"
	"net/url"
	"time"

	"github.com/slessio/sless/domain"
)

// Trigger runs a function on HTTP requests or a cron schedule (SPEC §3).
type Trigger struct {
	Namespace string             `json:"namespace"`
	Name      string             `json:"name"`
	Type      domain.TriggerType `json:"type"`
	Function  string             `json:"function"`
	Schedule  string             `json:"schedule,omitempty"`
	Enabled   bool               `json:"enabled"`
	// Active is true when the trigger's workload is running or scheduled.
	Active bool `json:"active"`
	// URL is where an http trigger serves the function (no token needed).
	URL string `json:"url,omitempty"`
	// NextRunAt is the next slot of an enabled cron trigger.
	NextRunAt *time.Time `json:"next_run_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
}

// CreateTriggerRequest is the body of CreateTrigger; Enabled nil means true.
type CreateTriggerRequest struct {
	Name     string             `json:"name"`
	Type     domain.TriggerType `json:"type"`
	Function string             `json:"function"`
	Schedule string             `json:"schedule,omitempty"`
	Enabled  *bool              `json:"enabled,omitempty"`
}

// ListTriggers returns the namespace's triggers, only function's when it is
// not "".
func (c *Client) ListTriggers(ctx context.Context, function string) ([]Trigger, error) {
	var out struct {
		Triggers []Trigger `json:"triggers"`
	}
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
	return jsonOf[Trigger](ctx, c, routePatchTrigger, map[string]bool{"enabled": enabled}, name)
}

// DeleteTrigger deletes a trigger. Errors: *Error with CodeNotFound.
func (c *Client) DeleteTrigger(ctx context.Context, name string) error {
	_, err := c.doJSON(ctx, routeDeleteTrigger, nil, nil, name)
	return err
}
